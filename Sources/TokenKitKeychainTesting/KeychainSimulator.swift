public import Foundation
public import PersistenceKeychain

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A Keychain for tests, on any platform: a ``/PersistenceKeychain/KeychainBackend`` that follows the documented
/// semantics of `SecItemAdd`, `SecItemCopyMatching`, `SecItemUpdate` and `SecItemDelete` for generic passwords: the
/// primary key, access groups and their entitlement errors, protected data before the first unlock and while locked,
/// and user presence (<doc:KeychainSimulatorSemantics>). Several processes can share one simulator through a file.
///
/// ```swift
/// let keychain = KeychainSimulator(configuration: .init(accessGroups: ["TEAMID.com.example.shared"]))
/// let store = KeychainTokenStore(
///     configuration: .init(service: "com.example.tokens", accessGroup: "TEAMID.com.example.shared"),
///     keychain: keychain)
/// keychain.reboot()  // the next read is "unavailable" until keychain.unlock()
/// ```
public final class KeychainSimulator: KeychainBackend, @unchecked Sendable {
    /// What the simulated process is entitled to, and how the user answers prompts.
    public struct Configuration: Sendable {
        /// The process's access groups in entitlement order; the first is where items without a group go.
        public var accessGroups: [String]
        /// Whether the user confirms presence (Face ID, Touch ID, passcode) when an item asks for it.
        public var userPresence: Bool
        /// Whether a read before the first unlock answers `errSecItemNotFound` instead of
        /// `errSecInteractionNotAllowed`, as reads during an app's prewarming have been seen to; `false` by default.
        public var readsBeforeFirstUnlockAnswerNotFound: Bool
        /// Whether items added without `kSecUseDataProtectionKeychain` live apart from the others, as in the
        /// file-based keychain of macOS, where a query finds only the kind it names; `false` (as on iOS) by
        /// default.
        public var separatesFileBasedKeychain: Bool

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - accessGroups: The access groups, first the default; `["TEAMID.app"]` by default. Empty: the
        ///     process has no Keychain entitlement at all.
        ///   - userPresence: Whether user presence is confirmed; `true` by default.
        ///   - readsBeforeFirstUnlockAnswerNotFound: Whether reads before the first unlock answer "not found";
        ///     `false` by default.
        ///   - separatesFileBasedKeychain: Whether items without `kSecUseDataProtectionKeychain` live apart, as on
        ///     macOS; `false` by default.
        public init(
            accessGroups: [String] = ["TEAMID.app"], userPresence: Bool = true,
            readsBeforeFirstUnlockAnswerNotFound: Bool = false, separatesFileBasedKeychain: Bool = false
        ) {
            self.accessGroups = accessGroups
            self.userPresence = userPresence
            self.readsBeforeFirstUnlockAnswerNotFound = readsBeforeFirstUnlockAnswerNotFound
            self.separatesFileBasedKeychain = separatesFileBasedKeychain
        }
    }

    /// A stored item.
    struct Item: Codable, Hashable {
        var accessGroup: String
        var service: String
        var account: String
        var synchronizable: Bool
        var accessibility: String
        var userPresence: Bool
        var data: Data
        /// Whether it was added with `kSecUseDataProtectionKeychain`; `nil` in files written before this was kept.
        var dataProtection: Bool? = nil
    }

    /// Device state and items; protected by `lock`.
    struct State: Codable {
        var items: [Item] = []
        var unlockedSinceBoot = true
        var locked = false
    }

    private let mutex = NSLock()
    private var memory = State()  // protected by `lock`; unused with a file
    private var configurationValue: Configuration  // protected by `lock`
    private let file: URL?

    /// Creates an empty, unlocked Keychain in memory.
    ///
    /// - Parameter configuration: The entitlements and the user's answer to prompts.
    public init(configuration: Configuration = Configuration()) {
        self.configurationValue = configuration
        self.file = nil
    }

    /// Creates a Keychain kept in `file`, shared with every process that opens the same file.
    ///
    /// - Parameters:
    ///   - file: Where the items and the device state are kept (created when missing).
    ///   - configuration: This process's entitlements and the user's answer to prompts.
    public init(file: URL, configuration: Configuration = Configuration()) {
        self.configurationValue = configuration
        self.file = file
    }

    /// This process's entitlements and the user's answer to prompts; change them to test a misconfigured app.
    public var configuration: Configuration {
        get { mutex.withLock { configurationValue } }
        set { mutex.withLock { configurationValue = newValue } }
    }

    /// Whether protected data is available now (`UIApplication.isProtectedDataAvailable`): unlocked since boot and
    /// not locked.
    public var isProtectedDataAvailable: Bool {
        var available = false
        _ = withState { state, _ in
            available = state.unlockedSinceBoot && !state.locked
            return .success
        }
        return available
    }

    /// ``isProtectedDataAvailable``, for ``/PersistenceKeychain/KeychainTokenStore``: a read that finds nothing
    /// while protected data is unavailable is "unavailable" (see
    /// ``Configuration/readsBeforeFirstUnlockAnswerNotFound``).
    public var protectedDataAvailability: Bool? { isProtectedDataAvailable }

    /// Restarts the device: protected data stays unavailable until ``unlock()``.
    public func reboot() {
        mutateState {
            $0.unlockedSinceBoot = false; $0.locked = true
        }
    }
    /// Locks the device: "when unlocked" items become unavailable.
    public func lock() { mutateState { $0.locked = true } }
    /// Unlocks the device: every item is available.
    public func unlock() {
        mutateState {
            $0.unlockedSinceBoot = true; $0.locked = false
        }
    }

    // MARK: KeychainBackend

    /// `SecItemAdd` for a generic password.
    ///
    /// - Parameter attributes: The item.
    /// - Returns: `success`, `duplicateItem`, `interactionNotAllowed`, `missingEntitlement`, or `errSecParam` (-50)
    ///   for an item the Keychain would refuse.
    public func add(_ attributes: [KeychainAttribute]) -> KeychainStatus {
        let request = Request(attributes)
        return withState { state, configuration in
            guard request.isGenericPassword, let service = request.service, let account = request.account,
                let data = request.data
            else { return Self.param }
            guard let group = request.accessGroup ?? configuration.accessGroups.first,
                configuration.accessGroups.contains(group)
            else { return .missingEntitlement }
            guard state.unlockedSinceBoot else { return .interactionNotAllowed }
            let accessibility = request.accessibility ?? .whenUnlocked
            if request.synchronizable && accessibility.isThisDeviceOnly { return Self.param }
            let item = Item(
                accessGroup: group, service: service, account: account, synchronizable: request.synchronizable,
                accessibility: accessibility.description, userPresence: request.userPresence, data: data,
                dataProtection: request.dataProtection)
            if state.items.contains(where: { $0.hasPrimaryKey(of: item) }) { return .duplicateItem }
            if !Self.readable(item, state) { return .interactionNotAllowed }
            state.items.append(item)
            return .success
        }
    }

    /// `SecItemCopyMatching` returning the data of one item.
    ///
    /// - Parameter query: The query.
    /// - Returns: The status and the data.
    public func copyMatching(_ query: [KeychainAttribute]) -> (status: KeychainStatus, data: Data?) {
        let request = Request(query)
        var found: Data?
        let status = withState { state, configuration in
            if let failure = Self.check(request, configuration) { return failure }
            // Before the first unlock the Keychain cannot tell whether a protected item matches.
            if !state.unlockedSinceBoot {
                return configuration.readsBeforeFirstUnlockAnswerNotFound ? .itemNotFound : .interactionNotAllowed
            }
            guard let index = Self.matches(request, state, configuration).first else { return .itemNotFound }
            let item = state.items[index]
            guard Self.readable(item, state) else { return .interactionNotAllowed }
            if item.userPresence && !configuration.userPresence { return .userCanceled }
            found = item.data
            return .success
        }
        return (status, found)
    }

    /// `SecItemUpdate` of the data and protection of every matching item.
    ///
    /// - Parameters:
    ///   - query: The query.
    ///   - changes: The attributes to set.
    /// - Returns: `success`, `itemNotFound`, `interactionNotAllowed`, or `missingEntitlement`.
    public func update(_ query: [KeychainAttribute], with changes: [KeychainAttribute]) -> KeychainStatus {
        let request = Request(query)
        let change = Request(changes)
        return withState { state, configuration in
            if let failure = Self.check(request, configuration) { return failure }
            let indices = Self.matches(request, state, configuration)
            guard !indices.isEmpty else { return .itemNotFound }
            guard indices.allSatisfy({ Self.readable(state.items[$0], state) }) else { return .interactionNotAllowed }
            for index in indices {
                if let data = change.data { state.items[index].data = data }
                if let accessibility = change.accessibility {
                    state.items[index].accessibility = accessibility.description
                    state.items[index].userPresence = change.userPresence
                }
            }
            return .success
        }
    }

    /// `SecItemDelete` of every matching item.
    ///
    /// - Parameter query: The query.
    /// - Returns: `success`, `itemNotFound`, `interactionNotAllowed`, or `missingEntitlement`.
    public func delete(_ query: [KeychainAttribute]) -> KeychainStatus {
        let request = Request(query)
        return withState { state, configuration in
            if let failure = Self.check(request, configuration) { return failure }
            let indices = Self.matches(request, state, configuration)
            guard !indices.isEmpty else { return .itemNotFound }
            guard state.unlockedSinceBoot else { return .interactionNotAllowed }
            for index in indices.reversed() { state.items.remove(at: index) }
            return .success
        }
    }

    // MARK: Semantics

    static let param = KeychainStatus(rawValue: -50)

    /// The entitlement and device checks every call makes first.
    private static func check(_ request: Request, _ configuration: Configuration) -> KeychainStatus? {
        guard request.isGenericPassword else { return param }
        if configuration.accessGroups.isEmpty { return .missingEntitlement }
        if let group = request.accessGroup, !configuration.accessGroups.contains(group) {
            return .missingEntitlement
        }
        return nil
    }

    /// The items a query matches: in the named group or any of the process's, with every attribute it names.
    private static func matches(_ request: Request, _ state: State, _ configuration: Configuration) -> [Int] {
        state.items.indices.filter { index in
            let item = state.items[index]
            return
                (request.accessGroup.map { $0 == item.accessGroup }
                ?? configuration.accessGroups.contains(item.accessGroup))
                && request.service.map { $0 == item.service } ?? true
                && request.account.map { $0 == item.account } ?? true
                && request.synchronizable == item.synchronizable
                && (!configuration.separatesFileBasedKeychain
                    || request.dataProtection == (item.dataProtection ?? true))
        }
    }

    /// Whether the device state lets the item's data be used now.
    private static func readable(_ item: Item, _ state: State) -> Bool {
        guard state.unlockedSinceBoot else { return false }
        let afterFirstUnlock = item.accessibility.hasPrefix("afterFirstUnlock")
        return afterFirstUnlock || !state.locked
    }

    /// The attributes of one call, by meaning.
    private struct Request {
        var isGenericPassword = false
        var service: String?
        var account: String?
        var accessGroup: String?
        var synchronizable = false
        var accessibility: KeychainTokenStore.Accessibility?
        var userPresence = false
        var data: Data?
        var dataProtection = false

        init(_ attributes: [KeychainAttribute]) {
            for attribute in attributes {
                switch attribute {
                case .genericPasswordClass: isGenericPassword = true
                case .service(let value): service = value
                case .account(let value): account = value
                case .accessGroup(let value): accessGroup = value
                case .synchronizable(let value): synchronizable = value
                case .accessible(let value): accessibility = value
                case .userPresence(let value):
                    accessibility = value
                    userPresence = true
                case .valueData(let value): data = value
                case .dataProtectionKeychain: dataProtection = true
                case .returnData, .matchLimitOne: break
                }
            }
        }
    }

    // MARK: Storage

    private func mutateState(_ body: (inout State) -> Void) {
        _ = withState { state, _ in
            body(&state)
            return .success
        }
    }

    /// Runs `body` on the state, in memory or in the file under an exclusive `flock`.
    private func withState(_ body: (inout State, Configuration) -> KeychainStatus) -> KeychainStatus {
        mutex.lock()
        defer { mutex.unlock() }
        guard let file else { return body(&memory, configurationValue) }
        let descriptor = open(file.path + ".lock", O_RDWR | O_CREAT, 0o600)
        guard descriptor >= 0 else { return KeychainStatus(rawValue: -61) }  // errSecWrPerm
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX) == 0 else { return KeychainStatus(rawValue: -61) }
        defer { flock(descriptor, LOCK_UN) }
        var state = (try? Data(contentsOf: file)).flatMap { try? JSONDecoder().decode(State.self, from: $0) } ?? State()
        let status = body(&state, configurationValue)
        if let data = try? JSONEncoder().encode(state) { try? data.write(to: file, options: .atomic) }
        return status
    }
}

extension KeychainSimulator.Item {
    func hasPrimaryKey(of other: Self) -> Bool {
        accessGroup == other.accessGroup && service == other.service && account == other.account
            && synchronizable == other.synchronizable && (dataProtection ?? true) == (other.dataProtection ?? true)
    }
}
