#if canImport(Glibc)
    import Glibc
#endif

// The commands are types under Commands/ (tests run them in-process through
// `StallwatchCLI.run`); this only wires the process's arguments, streams and the demo
// workload to them.
let code = StallwatchCLI.run(
    Array(CommandLine.arguments.dropFirst()),
    context: .process(demo: { budget, keep in try Demo.run(budgetMilliseconds: budget, keep: keep) }))
exit(code.rawValue)
