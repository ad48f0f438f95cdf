@_exported import StallwatchCore
