// Placeholder: the sampler helper replaces this file.
#pragma once
