// A scanner for object keys in JSON text: enough to find a value by its key path.
#include "metadata_scan.h"

namespace aotc_rt {
namespace {

size_t skip_space(const std::string &t, size_t i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) ++i;
  return i;
}

// i at an opening quote: the index after the closing one (npos when unterminated);
// `out` gets the contents with simple escapes resolved.
size_t read_string(const std::string &t, size_t i, std::string *out) {
  for (++i; i < t.size(); ++i) {
    char c = t[i];
    if (c == '"') return i + 1;
    if (c == '\\') {
      if (++i >= t.size()) break;
      c = t[i];
      c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
    }
    if (out) out->push_back(c);
  }
  return std::string::npos;
}

// i at the start of a value: the index just after it (npos when malformed)
size_t skip_value(const std::string &t, size_t i) {
  if (i >= t.size()) return std::string::npos;
  if (t[i] == '"') return read_string(t, i, nullptr);
  if (t[i] != '{' && t[i] != '[') {
    while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && t[i] != ' ' &&
           t[i] != '\n')
      ++i;
    return i;
  }
  int depth = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '"') {
      i = read_string(t, i, nullptr);
      if (i == std::string::npos) return i;
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
    ++i;
  }
  return std::string::npos;
}

// [begin, end) spans an object: the span of the value of `key`, or false
bool find_key(const std::string &t, size_t begin, size_t end, const char *key, size_t *vb,
              size_t *ve) {
  if (begin >= end || t[begin] != '{') return false;
  size_t i = skip_space(t, begin + 1);
  while (i < end && t[i] == '"') {
    std::string name;
    i = read_string(t, i, &name);
    if (i == std::string::npos) return false;
    i = skip_space(t, i);
    if (i >= end || t[i] != ':') return false;
    const size_t value = skip_space(t, i + 1);
    const size_t after = skip_value(t, value);
    if (after == std::string::npos || after > end) return false;
    if (name == key) {
      *vb = value;
      *ve = after;
      return true;
    }
    i = skip_space(t, after);
    if (i < end && t[i] == ',') i = skip_space(t, i + 1);
  }
  return false;
}

}  // namespace

bool json_lookup(const std::string &text, std::initializer_list<const char *> path,
                 std::string *value) {
  size_t begin = skip_space(text, 0), end = text.size();
  while (end > begin && (text[end - 1] == ' ' || text[end - 1] == '\n')) --end;
  for (const char *key : path)
    if (!find_key(text, begin, end, key, &begin, &end)) return false;
  value->clear();
  if (text[begin] == '"') return read_string(text, begin, value) != std::string::npos;
  value->assign(text, begin, end - begin);
  return true;
}

}  // namespace aotc_rt
