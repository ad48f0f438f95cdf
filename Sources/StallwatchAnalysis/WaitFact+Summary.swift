import StallwatchCore

extension WaitFact {
    /// One line for people, as `report` and `show` print it after "waited on":
    /// "read of /var/lib/app/feed.json", "recv from 127.0.0.1:5432",
    /// "lock held by thread 4711 'cache-refresh' in `Cache.refresh()`",
    /// "queue 'db' run by thread 4712 'worker' in `Store.save()`" (a blocked `DispatchQueue.sync`),
    /// "page fault in /data/index.bin", "SQL `SELECT …` on /data/app.sqlite".
    public var summary: String {
        switch kind {
        case .file:
            guard let target = self.target ?? fd.map({ "fd \($0)" }) else {
                return "\(verb) (/proc does not name the file while the syscall runs on CPU)"
            }
            return "\(verb) of \(target)"
        case .socket:
            let target = self.target ?? fd.map { "fd \($0)" } ?? "a socket"
            let preposition = ["send", "write", "connect"].contains(verb) ? "to" : "from"
            return "\(verb) \(preposition) \(target)"
        case .pageFault:
            return target.map { "page fault in \($0)" } ?? "page fault (mapping unknown)"
        case .mutex:
            guard let owner else { return "a mutex" }
            var text = "lock held by thread \(owner.tid)"
            if let name = owner.name { text += " '\(name)'" }
            if let function = WaitFact.ownerFunction(owner.frames) { text += " in `\(function)`" }
            return text
        case .futex:
            guard let owner else {
                return "futex wait" + (address.map { " on 0x" + String($0, radix: 16) } ?? "")
                    + " (the waker is not recorded anywhere)"
            }
            var text = "queue " + (target.map { "'\($0)'" } ?? "(no label)") + " run by thread \(owner.tid)"
            if let name = owner.name { text += " '\(name)'" }
            if let function = WaitFact.ownerFunction(owner.frames) { text += " in `\(function)`" }
            return text
        case .database:
            let sql = statement.map { WaitFact.oneLine($0, limit: 60) } ?? "?"
            return "SQL `\(sql)`" + (target.map { " on \($0)" } ?? "")
        case .cpu:
            return "a CPU (runnable, kept off one by other threads)"
        }
    }

    /// The operation in plain words: `pread64` → `read`, `recvfrom` → `recv`.
    private var verb: String {
        switch operation ?? "" {
        case "read", "pread64", "readv", "preadv", "preadv2": "read"
        case "write", "pwrite64", "writev", "pwritev", "pwritev2": "write"
        case "recvfrom", "recvmsg", "recvmmsg": "recv"
        case "sendto", "sendmsg", "sendmmsg", "sendfile": "send"
        case "": "I/O"
        case let other: other
        }
    }

    /// The owner's innermost app function, simplified (`FactCache.refresh()`), else its
    /// innermost named function.
    static func ownerFunction(_ frames: [Frame]) -> String? {
        let named = frames.filter { $0.symbol != nil }
        guard let frame = named.first(where: { !$0.isSystem }) ?? named.first, let symbol = frame.symbol else {
            return nil
        }
        guard let open = symbol.firstIndex(of: "(") else { return symbol }
        var name = symbol[..<open]
        // Drop the module: "MyApp.Cache.refresh" → "Cache.refresh" (C names have no dots).
        if let dot = name.firstIndex(of: "."), name[name.index(after: dot)...].contains(where: { $0.isUppercase }) {
            name = name[name.index(after: dot)...]
        }
        return name + "()"
    }

    /// `text` on one line, cut to `limit` characters with "…".
    static func oneLine(_ text: String, limit: Int) -> String {
        let flat = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return flat.count > limit ? flat.prefix(limit - 1) + "…" : flat
    }
}
