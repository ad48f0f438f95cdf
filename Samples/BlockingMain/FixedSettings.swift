// Placeholder until ReadMostlyCache lands on main.
extension FixedBlockers {
    func refreshSettings() {}
}
