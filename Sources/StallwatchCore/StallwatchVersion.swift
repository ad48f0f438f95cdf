/// Stallwatch's version: the one place it is written down. `stallwatch --version` prints it
/// and the exporters stamp their files with it (speedscope's `exporter`, Chrome's
/// `otherData`), so a file says which Stallwatch wrote it.
///
/// A constant; read it from any thread.
package enum StallwatchVersion {
    /// `0.9.0`.
    package static let current = "0.9.0"
}
