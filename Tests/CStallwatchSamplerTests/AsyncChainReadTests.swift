// Following an async context chain never faults: a context that is freed, unmapped, misaligned or
// loops ends the chain with a marker (unreadable, truncated) and keeps the callers read before it;
// a chain ends at the task's root, whose resume function is the runtime's own.
import CStallwatchSampler
import Glibc
import Testing

@Suite struct AsyncChainReadTests {
    /// Contexts laid out as the runtime's `AsyncContext` starts: Parent, then ResumeParent.
    final class Contexts {
        let words: UnsafeMutablePointer<UInt64>
        let count: Int

        init(count: Int) {
            self.count = count
            words = .allocate(capacity: 2 * count)
            words.initialize(repeating: 0, count: 2 * count)
        }

        deinit { words.deallocate() }

        func address(_ index: Int) -> UInt64 { UInt64(UInt(bitPattern: words + 2 * index)) }

        func set(_ index: Int, parent: UInt64, resume: UInt64) {
            words[2 * index] = parent
            words[2 * index + 1] = resume
        }
    }

    static func follow(_ context: UInt64) -> (resume: [UInt64], end: Int32) {
        var chain = sw_async_chain()
        sw_async_follow(context, &chain)
        let resume = withUnsafeBytes(of: &chain.resume) { raw in
            raw.bindMemory(to: UInt.self).prefix(Int(chain.count)).map { UInt64($0) }
        }
        return (resume, chain.end)
    }

    /// An address in the Concurrency runtime's code (`swift_job_run`).
    static var runtimeAddress: UInt64 {
        UInt64(UInt(bitPattern: dlsym(nil, "swift_job_run")))  // RTLD_DEFAULT (glibc: 0)
    }

    @Test func theChainEndsAtTheTaskRootWithoutTheRuntimesCompletion() {
        #expect(sw_async_prepare() == 1)
        #expect(sw_async_in_runtime(Self.runtimeAddress) == 1)
        let contexts = Contexts(count: 4)
        contexts.set(0, parent: contexts.address(1), resume: 0x5000_0100)
        contexts.set(1, parent: contexts.address(2), resume: 0x5000_0200)
        contexts.set(2, parent: contexts.address(3), resume: 0x5000_0300)
        contexts.set(3, parent: 0, resume: Self.runtimeAddress)
        let chain = Self.follow(contexts.address(0))
        #expect(chain.resume == [0x5000_0100, 0x5000_0200, 0x5000_0300])
        #expect(chain.end == SW_ASYNC_END_ROOT)
    }

    @Test func aFreedContextEndsTheChainUnreadableAfterTheCallersRead() throws {
        _ = sw_async_prepare()
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let freed = try #require(mmap(nil, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        let freedAddress = UInt64(UInt(bitPattern: freed))
        munmap(freed, page)
        let contexts = Contexts(count: 2)
        contexts.set(0, parent: contexts.address(1), resume: 0x5000_0100)
        contexts.set(1, parent: freedAddress, resume: 0x5000_0200)
        let chain = Self.follow(contexts.address(0))
        #expect(chain.resume == [0x5000_0100, 0x5000_0200])
        #expect(chain.end == SW_ASYNC_END_UNREADABLE)
        // Garbage from the start: a null, a misaligned, a kernel address.
        for bad: UInt64 in [0, contexts.address(0) + 3, 0xFFFF_8000_0000_0000, freedAddress] {
            let none = Self.follow(bad)
            #expect(none.resume.isEmpty && none.end == SW_ASYNC_END_UNREADABLE, "\(bad)")
        }
    }

    @Test func aLoopingChainIsTruncatedAtTheLimit() {
        _ = sw_async_prepare()
        let contexts = Contexts(count: 1)
        contexts.set(0, parent: contexts.address(0), resume: 0x5000_0100)
        let chain = Self.follow(contexts.address(0))
        #expect(chain.resume.count == Int(SW_ASYNC_MAX_CHAIN))
        #expect(chain.end == SW_ASYNC_END_TRUNCATED)
    }
}
