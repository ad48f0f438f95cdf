// Placeholder: the BlockingMain sample (issue 8) is being written.
