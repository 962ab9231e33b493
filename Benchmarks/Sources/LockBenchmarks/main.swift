// The snapshot lock against Synchronization.Mutex: ratios measured in the same run.
// Run: swift run -c release --package-path Benchmarks LockBenchmarks
//
// `LockedValue` (AuthToken's lock: OSAllocatedUnfairLock on Apple platforms, a pthread_mutex_t on Linux) replaces
// `Mutex` so TokenKit runs on macOS 13 and iOS 16. `TokenRefreshClient`'s snapshot read (`currentToken`) is a
// `withLock` on a small struct; the target is within 2x of a `Mutex` read. The lock
// here is AuthToken's own source file, compiled into a library target of this package (LockedValueUnderTest, a
// symlink) and called across the module boundary, as TokenRefresh calls AuthToken's.
import AuthToken
import BenchmarkSupport
import Foundation
import LockedValueUnderTest
import Synchronization

/// Consumes a value so the optimizer cannot drop the read that produced it.
@inline(never) func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

/// The shape of `TokenRefreshClient`'s snapshot: the token, the state and the offline flag.
struct Snapshot {
    var token: AuthToken?
    var userID: String? = "user-1"
    var isOffline = false
}

let token = AuthToken(
    accessToken: "bench-access-token-lock-0001", refreshToken: "bench-refresh-token-lock-0001",
    receivedAt: Date(), lifetime: 3600)
let mutex = Mutex(Snapshot(token: token))
let locked = LockedValue(Snapshot(token: token))
let nslocked = (lock: NSLock(), box: UnsafeMutablePointer<Snapshot>.allocate(capacity: 1))
nslocked.box.initialize(to: Snapshot(token: token))

// `--loop <locked|mutex|none> <count>`: only that read, `count` times, for an instruction count under
// `valgrind --tool=callgrind` (`Benchmarks/callgrind lock`).
let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "--loop", let count = Int(arguments[3]) {
    for _ in 0..<count {
        switch arguments[2] {
        case "locked": blackHole(locked.withLock { $0.token })
        case "mutex": blackHole(mutex.withLock { $0.token })
        default: blackHole(count)
        }
    }
    exit(0)
}

// Alternating rounds, so load that comes and goes hits both sides alike.
var mutexReads: [Double] = []
var lockedReads: [Double] = []
var nsLockReads: [Double] = []
for _ in 0..<7 {
    mutexReads.append(
        Harness.nanosecondsPerOperation(samples: 5, iterations: 500_000) { blackHole(mutex.withLock { $0.token }) })
    lockedReads.append(
        Harness.nanosecondsPerOperation(samples: 5, iterations: 500_000) { blackHole(locked.withLock { $0.token }) })
    nsLockReads.append(
        Harness.nanosecondsPerOperation(samples: 5, iterations: 500_000) {
            nslocked.lock.lock()
            let value = nslocked.box.pointee.token
            nslocked.lock.unlock()
            blackHole(value)
        })
}
let ratio = Harness.median(zip(lockedReads, mutexReads).map { $0 / $1 })
let nsRatio = Harness.median(zip(nsLockReads, mutexReads).map { $0 / $1 })
let passed = Harness.report(
    "LockedValue snapshot read vs Mutex read",
    "\(Harness.format(Harness.median(lockedReads))) vs \(Harness.format(Harness.median(mutexReads))) = "
        + String(format: "%.2fx", ratio), target: "<= 2x", passed: ratio <= 2)
print(
    "      (diagnostic: an NSLock-guarded read costs \(Harness.format(Harness.median(nsLockReads))) = "
        + String(format: "%.2fx", nsRatio) + " of the Mutex read)")
exit(passed ? 0 : 1)
