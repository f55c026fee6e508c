"""Developer tools that need torch and its test extras: the OpInfo sweep and coverage table."""
