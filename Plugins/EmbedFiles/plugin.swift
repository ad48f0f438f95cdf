import PackagePlugin

/// Embeds a target's `.js` and `.css` files in its build as one generated Swift source,
/// `enum EmbeddedFiles`, with one `static let` per file (`Page/report.js` → `reportJS`).
///
/// The files stay real script and style sheets that editors and linters understand, and the
/// module needs no resource bundle at run time: the text is compiled into the binary, so a
/// `stallwatch` copied anywhere still writes a complete HTML report.
@main
struct EmbedFiles: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let module = target as? SourceModuleTarget else { return [] }
        let files = module.sourceFiles.map(\.url).filter { ["js", "css"].contains($0.pathExtension) }
            .sorted { $0.path < $1.path }
        guard !files.isEmpty else { return [] }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedFiles.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) files in \(target.name)",
                executable: try context.tool(named: "embed-files").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]
            )
        ]
    }
}
