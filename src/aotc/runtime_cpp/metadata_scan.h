// Reads the few fields the C++ runtime needs from metadata.json (the CRC-32s, the
// format version, the target) by a path of object keys: a scanner, not a JSON library.
// Everything else the loader needs comes from the model library itself (aotc_describe_*).
#ifndef AOTC_RUNTIME_METADATA_SCAN_H
#define AOTC_RUNTIME_METADATA_SCAN_H

#include <initializer_list>
#include <string>

namespace aotc_rt {

// The value at `path` (object keys from the top level): a string's contents, or the raw
// text of a number, literal or nested object. false when absent or malformed.
bool json_lookup(const std::string &text, std::initializer_list<const char *> path,
                 std::string *value);

}  // namespace aotc_rt

#endif
