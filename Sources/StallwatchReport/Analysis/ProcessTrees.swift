import StallwatchCore

extension StallReport {
    /// One recording of a process tree among the traces read: the trace `T` its root process
    /// wrote and the traces in `T.d` its other processes wrote (`ProcessTreeFiles`).
    package struct ProcessTree: Sendable, Hashable, Codable {
        /// The recording's trace, `T`, as given.
        package var trace: String
        /// Its processes: the root first (when it wrote a trace), then the others by path.
        package var processes: [Process]

        /// One process of the tree and its trace.
        package struct Process: Sendable, Hashable, Codable {
            package var process: String
            package var pid: UInt32
            package var path: String
            /// Whether this is the recorded command's own process (it wrote `T`).
            package var root: Bool
            package var stalls: Int
        }
    }
}

extension StallReport.ProcessTree {
    /// The recordings of process trees among `traces`: every trace inside some `T.d` with the
    /// trace `T` (if it was read), in input order; a trace alone is none.
    static func trees(of traces: [StallReport.TraceInfo]) -> [Self] {
        // The root each trace in a `T.d` belongs to, then every trace's place.
        let suffix = ProcessTreeFiles.childDirectory(of: "")
        func rootOfChild(_ path: String) -> String? {
            guard let slash = path.lastIndex(of: "/") else { return nil }
            let directory = path[..<slash]
            guard directory.hasSuffix(suffix), directory.count > suffix.count else { return nil }
            return String(directory.dropLast(suffix.count))
        }
        let roots = Set(traces.compactMap { rootOfChild($0.path) })
        guard !roots.isEmpty else { return [] }
        var trees: [Self] = []
        var index: [String: Int] = [:]
        for info in traces {
            let child = rootOfChild(info.path)
            guard let root = child ?? (roots.contains(info.path) ? info.path : nil) else { continue }
            let process = Process(
                process: info.process, pid: info.pid, path: info.path, root: child == nil, stalls: info.stalls)
            if let at = index[root] {
                if child == nil {
                    trees[at].processes.insert(process, at: 0)
                } else {
                    trees[at].processes.append(process)
                }
            } else {
                index[root] = trees.count
                trees.append(Self(trace: root, processes: [process]))
            }
        }
        return trees
    }
}
