import StallwatchReport

#if canImport(Glibc)
    import Glibc
#endif

// The commands live in StallwatchReport (testable without a process); this only wires the
// process's arguments, streams and the demo workload to them.
let code = StallwatchCLI.run(
    Array(CommandLine.arguments.dropFirst()),
    context: .process(demo: { budget, keep in try Demo.run(budgetMilliseconds: budget, keep: keep) }))
exit(code.rawValue)
