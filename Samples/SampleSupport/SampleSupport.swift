// Placeholder: shared support for the remedy samples (issue 8) is being written.
import Stallwatch
