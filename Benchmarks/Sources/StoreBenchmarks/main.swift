// FileTokenStore.save against the least a durable atomic write can do: write the same bytes to a temporary
// file, fsync it, rename it over the old one, fsync the directory. Both in one run, on the same disk.
// Target: the store's save within 2x of the hand-written write (the lock, the condition check's read and the
// JSON encoding are the overhead; the two fsyncs dominate both).
import AuthToken
import BenchmarkSupport
import Foundation
import Persistence

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let benchmarkToken = AuthToken(
    accessToken: "eyJhbGciOiJIUzI1NiJ9." + String(repeating: "p", count: 600) + ".sig",
    refreshToken: String(repeating: "r", count: 64), scope: "openid profile",
    receivedAt: Date(timeIntervalSince1970: 1_750_000_000), lifetime: 3600)

func session(_ generation: UInt64) -> StoredSession {
    StoredSession(token: benchmarkToken, userID: "user-1", generation: generation)
}

/// The hand-written durable atomic write.
func writeByHand(_ bytes: [UInt8], directory: String, name: String) {
    let temporary = directory + "/" + name + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    precondition(fd >= 0, "open failed")
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    precondition(written == bytes.count, "short write")
    precondition(fsync(fd) == 0, "fsync failed")
    close(fd)
    precondition(rename(temporary, directory + "/" + name) == 0, "rename failed")
    let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    precondition(fsync(directoryFD) == 0, "fsync(directory) failed")
    close(directoryFD)
}

/// Medians of the store's save and of the hand-written write, alternated a few times so a change in the
/// disk's mood hits both alike.
func measure(in root: URL, samples: Int, iterations: Int) async throws -> (store: Double, hand: Double, bytes: Int) {
    let storeDirectory = root.appendingPathComponent("store")
    let handDirectory = root.appendingPathComponent("hand")
    try FileManager.default.createDirectory(at: handDirectory, withIntermediateDirectories: true)
    _ = chmod(root.path, 0o700)
    _ = chmod(handDirectory.path, 0o700)
    let store = FileTokenStore(directory: storeDirectory)
    try await store.save(session(1), account: "bench", condition: .always)
    // The exact bytes the store writes for a session, so both sides write the same thing.
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: store.filePath(account: "bench"))))
    var generation: UInt64 = 1
    var storeRuns: [Double] = []
    var handRuns: [Double] = []
    for _ in 0..<3 {
        handRuns.append(
            Harness.nanosecondsPerOperation(samples: samples, iterations: iterations) {
                writeByHand(bytes, directory: handDirectory.path, name: "session.json")
            })
        storeRuns.append(
            try await Harness.nanosecondsPerOperation(samples: samples, iterations: iterations) {
                generation += 1
                try await store.save(session(generation), account: "bench", condition: .always)
            })
    }
    return (Harness.median(storeRuns), Harness.median(handRuns), bytes.count)
}

func ratioText(_ store: Double, _ hand: Double) -> String {
    "\(Harness.format(store)) vs \(Harness.format(hand)) = \(String(format: "%.2f", store / hand))x"
}

let diskRoot = FileManager.default.temporaryDirectory.appendingPathComponent(
    "tokenkit-store-bench-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: diskRoot) }
let disk = try await measure(in: diskRoot, samples: 15, iterations: 4)
print("session file: \(disk.bytes) bytes, temporary directory: \(FileManager.default.temporaryDirectory.path)")
Harness.report(
    "FileTokenStore.save vs write+fsync+rename+fsync(dir) by hand", ratioText(disk.store, disk.hand),
    target: "<= 2x", passed: disk.store / disk.hand <= 2)

// For information: on a RAM file system fsync costs almost nothing, so this shows the store's own overhead
// (lock, condition read, JSON) against the bare system calls. No target: it is not the durable case.
if FileManager.default.fileExists(atPath: "/dev/shm") {
    let memoryRoot = URL(fileURLWithPath: "/dev/shm/tokenkit-store-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: memoryRoot) }
    let memory = try await measure(in: memoryRoot, samples: 21, iterations: 50)
    print("INFO  same on /dev/shm (no real fsync): \(ratioText(memory.store, memory.hand))")
}
