#if canImport(Glibc)
    import Glibc
#endif

// The commands are types under Commands/ (tests run them in-process through
// `StallwatchCLI.run`); this only wires the process's arguments and streams to them.
let code = StallwatchCLI.run(Array(CommandLine.arguments.dropFirst()), context: .process())
exit(code.rawValue)
