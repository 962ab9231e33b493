import Foundation
import Persistence
import PersistenceKeychain
import Testing
import TokenKitKeychainTesting
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An app waiting for the account's lock file that an extension never lets go: the wait ends at
/// ``KeychainTokenStore/Configuration/lockTimeout`` on the store's clock, a `ManualClock` here. The time limits are
/// a safety net for a wait that never ends, not a wait.
@Suite(.logLeakCheck()) struct KeychainLockTimeoutTests {
    /// A store of `service`: a service of each test's own, since the lock of a service and account is shared by
    /// every store in the process (and the tests run at once).
    static func store(
        _ keychain: KeychainSimulator, service: String, container: URL? = nil,
        clock: some Clock<Duration> = ContinuousClock(), lockTimeout: Duration? = .seconds(5)
    ) -> KeychainTokenStore {
        KeychainTokenStore(
            configuration: .init(
                service: service, accessGroup: KeychainTokenStoreTests.group,
                sharedContainer: container, lockTimeout: lockTimeout),
            keychain: keychain, clock: clock)
    }

    /// Takes the container's lock file for the account the way another process does (an open file description of
    /// its own with an exclusive `flock`), after `store` has made the file.
    static func lockLikeAnExtension(_ store: KeychainTokenStore, container: URL) async throws -> Int32 {
        try await store.save(keychainTestSession("lock", generation: 1), account: "default", condition: .always)
        let locks = container.appendingPathComponent("TokenKitKeychainLocks")
        let name = try #require(
            try FileManager.default.contentsOfDirectory(atPath: locks.path).first { $0.hasSuffix(".lock") })
        let descriptor = open(locks.appendingPathComponent(name).path, O_RDWR)
        try #require(descriptor >= 0)
        try #require(flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        return descriptor
    }

    /// An app store on a `ManualClock` whose save waits for the lock file an extension holds (the descriptor),
    /// returned once the save is waiting on the clock.
    static func appWaitingForAnExtensionsLock(
        _ container: URL
    ) async throws -> (KeychainTokenStore, ManualClock, Int32, Task<Void, any Error>) {
        let clock = ManualClock()
        let app = store(
            KeychainTokenStoreTests.simulator(), service: "com.example.lock-\(UUID())", container: container,
            clock: clock)
        let extensionLock = try await lockLikeAnExtension(app, container: container)
        let waiting = Task {
            try await app.save(keychainTestSession("wait", generation: 2), account: "default", condition: .always)
        }
        await clock.waitForSleepers(count: 1)
        return (app, clock, extensionLock, waiting)
    }

    @Test(.timeLimit(.minutes(1)))
    func anAppWaitingForTheContainerLockAnExtensionNeverReleasesGivesUpAtTheLockTimeout() async throws {
        let container = try TemporaryDirectory()
        defer { container.remove() }
        let (app, clock, extensionLock, waiting) = try await Self.appWaitingForAnExtensionsLock(container.url)
        defer { close(extensionLock) }
        clock.advance(by: .seconds(5))
        let error = await #expect(throws: PersistenceError.lockTimedOut) { try await waiting.value }
        #expect(error?.detail?.contains("shared container") == true, "\(String(describing: error))")
        #expect(await app.load(account: "default").session?.generation == 1, "nothing was written")
    }

    @Test(.timeLimit(.minutes(1)))
    func anAppWaitingForTheContainerLockGetsItWhenTheExtensionLetsGoWithinTheTimeout() async throws {
        let container = try TemporaryDirectory()
        defer { container.remove() }
        let (app, clock, extensionLock, waiting) = try await Self.appWaitingForAnExtensionsLock(container.url)
        close(extensionLock)
        clock.advance(by: .seconds(1))
        try await waiting.value
        #expect(await app.load(account: "default").session?.generation == 2)
    }
}
