// Placeholder: the AsyncRender sample (issue 8) is being written.
