import StallwatchReport

/// `--wide` and `--verbose` of the commands that print stalls as text (`report`, `show`),
/// included with `@OptionGroup var text: TextFlags`. Call from the command's thread.
struct TextFlags: ParsableArguments {
    /// Whether lines may be as long as their content.
    @Flag(help: "Do not fit lines to the terminal: show long names in full.")
    var wide = false

    /// Whether frames show their full symbols.
    @Flag(help: "Show frames by their full demangled symbols.")
    var verbose = false

    /// How the text is laid out in `context`: colour on a terminal, `outputWidth` columns
    /// unless `wide`.
    func options(in context: CommandContext) -> TextOptions {
        TextOptions(colour: context.usesColour, width: wide ? nil : context.outputWidth, verbose: verbose)
    }
}
