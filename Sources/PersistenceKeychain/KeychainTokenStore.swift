import AuthToken
public import Foundation
public import Persistence

/// A token store in the Keychain, one generic-password item per account, the item's data holding the session and
/// its generation.
///
/// - Items are readable after the first unlock since boot and never leave the device
///   (``Accessibility/afterFirstUnlockThisDeviceOnly``, the default), so background refreshes work while the
///   device is locked, and backups do not carry the tokens.
/// - An ``Configuration/accessGroup`` shares the items with app extensions; a
///   ``Configuration/sharedContainer`` (the App Group container) lets the app and its extensions refresh one
///   session once: ``withExclusiveAccess(account:_:)`` and every conditional write take a lock file there.
/// - The Keychain's answers mean what the status table says (see the `AppleKeychain` article):
///   `errSecItemNotFound` is absent; `errSecInteractionNotAllowed` is
///   ``/Persistence/PersistenceError/unavailable`` (never absent: a locked device is not "signed out");
///   `errSecDuplicateItem` on an add turns it into an update; `errSecMissingEntitlement` (-34018) is
///   ``/Persistence/PersistenceError/missingEntitlement`` with the entitlement named in the detail.
///
/// The store talks to the Keychain through a ``KeychainBackend``: the system's on Apple platforms, or
/// `KeychainSimulator` (the `TokenKitKeychainTesting` product) in tests on any platform.
public struct KeychainTokenStore: TokenStore {
    /// Options for a ``KeychainTokenStore``.
    public struct Configuration: Sendable {
        /// The `kSecAttrService` of the items, for example the app's bundle identifier plus `.tokens`.
        public var service: String
        /// The Keychain access group to share items with app extensions, or `nil` for the app's default.
        public var accessGroup: String?
        /// When the items can be read.
        public var accessibility: Accessibility
        /// Whether reading the item asks for Face ID, Touch ID or the passcode (a `SecAccessControl` with
        /// `.userPresence`). A dismissed prompt reads as unavailable, never as signed out. `false` by default.
        public var requiresUserPresence: Bool
        /// Whether the items are synchronized through iCloud Keychain; needs an accessibility class that is not
        /// "this device only". `false` by default.
        public var synchronizable: Bool
        /// A directory every process sharing the session can write (the App Group container), for the lock file
        /// that makes them refresh once; `nil` locks within this process only.
        public var sharedContainer: URL?
        /// Whether protected data is available now, such as a flag your app keeps from
        /// `UIApplication.isProtectedDataAvailable` and its notifications. When it says no, a read that finds
        /// nothing is ``/Persistence/PersistenceError/unavailable`` instead of absent: during prewarming the
        /// Keychain has been seen to answer "not found" for an item that is there. `nil` (the default) asks the
        /// backend (``KeychainBackend/protectedDataAvailability``), and trusts the Keychain's answer when it cannot
        /// tell.
        public var isProtectedDataAvailable: (@Sendable () -> Bool)?
        /// The longest wait for the account's lock file in ``sharedContainer`` while another process holds it (an
        /// extension's refresh, say, or an extension suspended mid-refresh) before an operation gives up with
        /// ``/Persistence/PersistenceError/lockTimedOut``; `nil` waits without limit. 5 s by default. Tasks of this
        /// process take turns without it.
        ///
        /// A `TokenRefreshClient` that times out re-reads the store and uses a token another process saved if it
        /// is still valid; it never refreshes without the lock.
        public var lockTimeout: Duration?
        /// The longest wait for the lock file in ``sharedContainer`` while the process holding it is at work (running,
        /// its ID recorded there, the file touched within the last few seconds: its refresh in flight), when that is
        /// longer than ``lockTimeout``: a token endpoint slower than the lock timeout is waited for, and the waiter
        /// reads the pair the holder stored. A suspended extension stops touching the file, and is waited for
        /// ``lockTimeout`` only. 30 s by default, the `TokenRefreshClient`'s default refresh timeout.
        public var liveHolderTimeout: Duration = .seconds(30)

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - service: The `kSecAttrService` of the items.
        ///   - accessGroup: An access group shared with extensions, or `nil`.
        ///   - accessibility: When the items can be read; after first unlock, this device only, by default.
        ///   - requiresUserPresence: Whether reads need user presence; `false` by default.
        ///   - synchronizable: Whether items sync through iCloud Keychain; `false` by default.
        ///   - sharedContainer: The directory for the lock file shared with extensions, or `nil`.
        ///   - isProtectedDataAvailable: Whether protected data is available now, or `nil`.
        ///   - lockTimeout: The longest wait for another process's lock; 5 s by default, `nil` for no limit.
        public init(
            service: String, accessGroup: String? = nil,
            accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly, requiresUserPresence: Bool = false,
            synchronizable: Bool = false, sharedContainer: URL? = nil,
            isProtectedDataAvailable: (@Sendable () -> Bool)? = nil, lockTimeout: Duration? = .seconds(5)
        ) {
            self.lockTimeout = lockTimeout
            self.isProtectedDataAvailable = isProtectedDataAvailable
            self.service = service
            self.accessGroup = accessGroup
            self.accessibility = accessibility
            self.requiresUserPresence = requiresUserPresence
            self.synchronizable = synchronizable
            self.sharedContainer = sharedContainer
        }
    }

    /// The store's options.
    public let configuration: Configuration
    let keychain: any KeychainBackend
    let queries: KeychainQueryBuilder
    private let timer: StoreClock

    /// Creates a store over a Keychain backend.
    ///
    /// - Parameters:
    ///   - configuration: Service, access group, accessibility and the shared container.
    ///   - keychain: The Keychain: `SystemKeychain()` on Apple platforms, a `KeychainSimulator` in tests.
    ///   - clock: The clock for lock waits (``Configuration/lockTimeout``); a `ManualClock` in tests.
    public init(
        configuration: Configuration, keychain: any KeychainBackend, clock: some Clock<Duration> = ContinuousClock()
    ) {
        self.configuration = configuration
        self.keychain = keychain
        self.timer = StoreClock(clock)
        self.queries = KeychainQueryBuilder(
            service: configuration.service, accessGroup: configuration.accessGroup,
            accessibility: configuration.accessibility, synchronizable: configuration.synchronizable,
            requiresUserPresence: configuration.requiresUserPresence)
    }

    /// The stored item's format: a version, so a newer app's items are not misread.
    private struct Envelope: Codable {
        let formatVersion: Int
        let session: StoredSession
    }
    private struct VersionHeader: Decodable {
        let formatVersion: Int
    }
    private static let formatVersion = 1

    private static func unsupported(_ version: Int) -> PersistenceError {
        PersistenceError.unsupportedFormatVersion.with(detail: "format version \(version)")
    }

    /// Reads the session for `account`.
    ///
    /// - Parameter account: The account key.
    /// - Returns: `.found`, `.absent`, or `.unavailable` (locked device, missing entitlement, unreadable item).
    public func load(account: String) async -> TokenStoreRead {
        switch read(account: account) {
        case .success(nil): .absent
        case .success(let session?): .found(session)
        case .failure(let error): .unavailable(error)
        }
    }

    /// Stores `session` for `account` if `condition` holds for the generation in the item now.
    ///
    /// - Parameters:
    ///   - session: The session.
    ///   - account: The account key.
    ///   - condition: When the write may happen.
    /// - Throws: ``/Persistence/PersistenceError/conflict``, ``/Persistence/PersistenceError/unavailable`` when the
    ///   device is locked, ``/Persistence/PersistenceError/missingEntitlement``, or another
    ///   ``/Persistence/PersistenceError``; what was stored before is intact.
    public func save(
        _ session: StoredSession, account: String, condition: WriteCondition
    ) async throws(PersistenceError) {
        if let problem = queries.configurationProblem { throw PersistenceError.writeFailed.with(detail: problem) }
        let bytes: Data
        do {
            bytes = try JSONEncoder().encode(Envelope(formatVersion: Self.formatVersion, session: session))
        } catch {
            throw PersistenceError.writeFailed.with(detail: "encoding the session failed")
        }
        try await locked(account) { () throws(PersistenceError) in
            try write(bytes, account: account, condition: condition, attempts: 2)
        }
    }

    /// Removes the session for `account` if `condition` holds.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - condition: When the removal may happen.
    /// - Throws: ``/Persistence/PersistenceError/conflict``, ``/Persistence/PersistenceError/unavailable``, or
    ///   another ``/Persistence/PersistenceError``.
    public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await locked(account) { () throws(PersistenceError) in
            if condition != .always {
                let current = try read(account: account).get()
                guard condition.allows(stored: current) else { throw PersistenceError.conflict }
            }
            let status = keychain.delete(queries.itemQuery(account: account))
            guard status == .success || status == .itemNotFound else {
                throw KeychainStatusMapping.error(
                    status, accessGroup: configuration.accessGroup, fallback: .writeFailed)
            }
        }
    }

    /// Runs `body` while no other body for `account` runs in this process, nor, with a
    /// ``Configuration/sharedContainer``, in any process sharing it (the app and its extensions).
    ///
    /// Tasks of this process take turns in arrival order (each is bounded by its own wait for the lock file and by
    /// its body); waiting for the lock file another process holds ends after ``Configuration/lockTimeout``.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - body: The work to run.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; ``/Persistence/PersistenceError/lockTimedOut`` when another process held the
    ///   lock file past ``Configuration/lockTimeout``; ``/Persistence/PersistenceError/lockFailed`` when the
    ///   lock cannot be had otherwise (the task was cancelled while waiting, the lock file cannot be opened).
    public func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let key = lockKey(account)
        if ProcessLocalLocks.heldKeys.contains(key) { return try await body() }
        do {
            try await ProcessLocalLocks.shared.acquire(key)
        } catch {
            throw PersistenceError.lockFailed.with(detail: "cancelled while waiting")
        }
        let started = timer.elapsed()
        defer { ProcessLocalLocks.shared.release(key) }
        return try await ProcessLocalLocks.$heldKeys.withValue(ProcessLocalLocks.heldKeys.union([key])) {
            guard
                let locks = configuration.sharedContainer?.appendingPathComponent(
                    "TokenKitKeychainLocks", isDirectory: true)
            else {
                return try await body()
            }
            return try await withContainerLock(account, in: locks, since: started, body)
        }
    }

    // MARK: Internals

    /// Runs `body` holding the account's lock file in the shared container (`locks`), waiting until
    /// ``Configuration/lockTimeout`` has passed since `started`. Without a timeout the wait has no limit (on a
    /// thread of its own); with one, the lock file is tried again after growing pauses (1 ms to 50 ms) on the
    /// store's clock.
    private func withContainerLock<T: Sendable>(
        _ account: String, in locks: URL, since started: Duration, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        guard let timeout = configuration.lockTimeout else {
            return try await FileTokenStore(directory: locks, configuration: .init(lockTimeout: nil))
                .withExclusiveAccess(account: lockName(account)) { try await body() }
        }
        // A zero lock timeout makes the file store try the lock once and answer `lockTimedOut` when it is held.
        let tryOnce = FileTokenStore(
            directory: locks, configuration: .init(lockTimeout: .zero, liveHolderTimeout: .zero))
        var pause = Duration.milliseconds(1)
        while true {
            let entered = LockedValue(false)
            do {
                return try await tryOnce.withExclusiveAccess(account: lockName(account)) {
                    entered.withLock { $0 = true }
                    return try await body()
                }
            } catch let error as PersistenceError where error == .lockTimedOut && !entered.withLock({ $0 }) {
                let left = timeout - (timer.elapsed() - started)
                guard left > .zero else {
                    // A holder still running is waited for longer: its refresh's answer is what this waiter needs.
                    var live = FileTokenStore.Configuration(
                        lockTimeout: .zero,
                        liveHolderTimeout: max(.zero, configuration.liveHolderTimeout - (timer.elapsed() - started)))
                    live.clock = timer
                    do {
                        return try await FileTokenStore(directory: locks, configuration: live)
                            .withExclusiveAccess(account: lockName(account)) {
                                entered.withLock { $0 = true }
                                return try await body()
                            }
                    } catch let error as PersistenceError where error == .lockTimedOut && !entered.withLock({ $0 }) {}
                    throw PersistenceError.lockTimedOut.with(
                        detail: "another process (the app or an extension) held the lock file in the shared container "
                            + "for longer than the lock timeout (\(timeout)), or than the wait for a running holder")
                }
                do {
                    try await timer.sleep(min(pause, left))
                } catch {
                    throw PersistenceError.lockFailed.with(detail: "cancelled while waiting")
                }
                pause = min(pause * 2, .milliseconds(50))
            }
        }
    }

    private func lockName(_ account: String) -> String {
        "\(configuration.accessGroup ?? "")|\(configuration.service)|\(account)"
    }

    private func lockKey(_ account: String) -> String { "keychain|" + lockName(account) }

    private func locked(
        _ account: String, _ operation: @Sendable () throws(PersistenceError) -> Void
    ) async throws(PersistenceError) {
        do {
            try await withExclusiveAccess(account: account) { try operation() }
        } catch let error as PersistenceError {
            throw error
        } catch {
            throw PersistenceError.lockFailed
        }
    }

    /// Adds or updates the item if `condition` holds. A duplicate on add (another process added it since the
    /// read) and a missing item on update (removed since) start again from the read, once.
    private func write(
        _ bytes: Data, account: String, condition: WriteCondition, attempts: Int
    ) throws(PersistenceError) {
        let current = try read(account: account).get()
        guard condition.allows(stored: current) else { throw PersistenceError.conflict }
        let status =
            current == nil
            ? keychain.add(queries.addAttributes(account: account, data: bytes))
            : keychain.update(queries.itemQuery(account: account), with: queries.updateAttributes(data: bytes))
        switch status {
        case .success:
            return
        case .duplicateItem where attempts > 1, .itemNotFound where attempts > 1:
            try write(bytes, account: account, condition: condition, attempts: attempts - 1)
        case .duplicateItem:
            throw PersistenceError.conflict.with(detail: "\(status): the item keeps being added elsewhere")
        default:
            throw KeychainStatusMapping.error(status, accessGroup: configuration.accessGroup, fallback: .writeFailed)
        }
    }

    /// Whether protected data is known to be unavailable now: the configured flag, else the backend's.
    var isProtectedDataUnavailable: Bool {
        let available = configuration.isProtectedDataAvailable?() ?? keychain.protectedDataAvailability
        return available == false
    }

    private func read(account: String) -> Result<StoredSession?, PersistenceError> {
        let (status, data) = keychain.copyMatching(queries.readQuery(account: account))
        switch KeychainStatusMapping.read(status, data: data, accessGroup: configuration.accessGroup) {
        case .failure(let error):
            return .failure(error)
        case .success(nil):
            if isProtectedDataUnavailable {
                return .failure(
                    PersistenceError.unavailable.with(
                        detail: "\(KeychainStatus.itemNotFound) while protected data is unavailable"))
            }
            return .success(nil)
        case .success(let data?):
            let decoder = JSONDecoder()
            // Every token read decodes once; only an item that does not decode is examined for its version.
            guard let envelope = try? decoder.decode(Envelope.self, from: data) else {
                guard let header = try? decoder.decode(VersionHeader.self, from: data) else {
                    return .failure(PersistenceError.corrupt.with(detail: "no format version"))
                }
                guard header.formatVersion <= Self.formatVersion else {
                    return .failure(Self.unsupported(header.formatVersion))
                }
                return .failure(PersistenceError.corrupt.with(detail: "unexpected shape"))
            }
            guard envelope.formatVersion <= Self.formatVersion else {
                return .failure(Self.unsupported(envelope.formatVersion))
            }
            return .success(envelope.session)
        }
    }
}

#if canImport(Security)
    extension KeychainTokenStore {
        /// Creates a store over the system Keychain.
        ///
        /// - Parameter configuration: Service, access group, accessibility and the shared container.
        public init(configuration: Configuration) {
            self.init(configuration: configuration, keychain: SystemKeychain())
        }
    }
#endif
