import StallwatchCore

extension StallText {
    /// The stack of the thread that held the lock the loop waited on, from the first sample
    /// that caught it (the owner is scanned only while it is blocked in a syscall).
    static func ownerStackLines(_ analyzed: AnalyzedStall, style: Style, options: TextOptions, width: Int?) -> [String]
    {
        let stall = analyzed.stall
        guard
            let index = stall.samples.firstIndex(where: { $0.wait?.owner?.frames.isEmpty == false }),
            let owner = stall.samples[index].wait?.owner
        else { return [] }
        let name = owner.name.map { " '\($0)'" } ?? ""
        var lines = ["", style.bold("Lock owner's stack") + " (thread \(owner.tid)\(name), sample \(index + 1))"]
        for frame in owner.frames.prefix(16) {
            let stack = ReportBuilder.stackFrame(frame, names: analyzed.names)
            let text = ReportText.frameLine(
                indent: "  ", name: options.verbose ? stack.symbol : stack.name, source: stack.source,
                module: nil, width: width)
            lines.append(stack.system ? style.dim(text) : text)
        }
        return lines
    }
}
