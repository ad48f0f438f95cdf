#include "CStallwatchSampler.h"
