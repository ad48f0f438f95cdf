// The fixed settings: a `ReadMostlyCache`. The refresher builds the next version outside any
// lock and only swaps the values in, so a reader on the main loop never waits behind it; it
// reads the current version while the next one is being built.
import Foundation
import SampleSupport
import Stallwatch
import StallwatchRemedies

extension FixedBlockers {
    func refreshSettings() {
        let settings = self.settings
        let run = self.run
        let loop = run.loop
        Thread.detachNewThread {
            // The screen reads while the refresh is under way, as in the blocking variant.
            loop.mainActor.post(label: "read settings") {
                let watch = Stopwatch()
                let version = settings.value(forKey: "version") ?? "?"
                run.note(
                    "lock", "read settings v\(version) after waiting \(ms(watch.elapsedMilliseconds)) ms (refreshing)")
            }
            let next = SettingsRefresh.build(version: 2, minimum: blockerDuration)
            for (key, value) in next { settings.setValue(value, forKey: key) }
            loop.mainActor.post(label: "settings refreshed") {
                run.note("settings", "now v\(settings.value(forKey: "version") ?? "?")")
            }
        }
    }
}
