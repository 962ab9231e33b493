import AuthToken

/// A token store built from closures, for quick doubles in tests and for adapting a storage API that
/// is not worth a type of its own.
///
/// ```swift
/// let failing = ClosureTokenStore(
///     load: { _ in .unavailable(.unavailable) },
///     save: { _, _, _ in throw .writeFailed },
///     remove: { _, _ in throw .writeFailed })
/// ```
///
/// Without an `exclusiveAccess` closure, ``withExclusiveAccess(account:_:)`` simply runs its body.
public struct ClosureTokenStore: TokenStore {
    package typealias Load = @Sendable (_ account: String) async -> TokenStoreRead
    package typealias Save =
        @Sendable (_ session: StoredSession, _ account: String, _ condition: WriteCondition) async throws -> Void
    package typealias Remove = @Sendable (_ account: String, _ condition: WriteCondition) async throws -> Void
    package typealias ExclusiveAccess =
        @Sendable (_ account: String, _ body: @Sendable () async throws -> Void) async throws -> Void

    private let loadClosure: Load
    private let saveClosure: Save
    private let removeClosure: Remove
    private let exclusiveAccessClosure: ExclusiveAccess?

    /// Creates a store from closures.
    ///
    /// - Parameters:
    ///   - load: Called by ``load(account:)``: reads an account's session.
    ///   - save: Called by ``save(_:account:condition:)``: writes an account's session if the condition holds.
    ///     An error other than a ``PersistenceError`` reaches the caller as ``PersistenceError/writeFailed``.
    ///   - remove: Called by ``remove(account:condition:)``: removes an account's session if the condition holds.
    ///     An error other than a ``PersistenceError`` reaches the caller as ``PersistenceError/writeFailed``.
    ///   - exclusiveAccess: Called by ``withExclusiveAccess(account:_:)`` to run `body` under the store's lock for
    ///     the account; it must run `body` exactly once. `nil` runs the body without a lock.
    public init(
        load: @escaping @Sendable (_ account: String) async -> TokenStoreRead,
        save:
            @escaping @Sendable (_ session: StoredSession, _ account: String, _ condition: WriteCondition)
            async throws -> Void,
        remove: @escaping @Sendable (_ account: String, _ condition: WriteCondition) async throws -> Void,
        exclusiveAccess: (
            @Sendable (_ account: String, _ body: @Sendable () async throws -> Void) async throws -> Void
        )? =
            nil
    ) {
        self.loadClosure = load
        self.saveClosure = save
        self.removeClosure = remove
        self.exclusiveAccessClosure = exclusiveAccess
    }

    /// Creates a store that forwards to `store`, so a test can replace just one operation.
    ///
    /// - Parameters:
    ///   - store: The store to forward to.
    ///   - load: Replaces `store`'s load, if given.
    ///   - save: Replaces `store`'s save, if given.
    ///   - remove: Replaces `store`'s remove, if given.
    public init(
        forwardingTo store: some TokenStore,
        load: (@Sendable (_ account: String) async -> TokenStoreRead)? = nil,
        save: (
            @Sendable (_ session: StoredSession, _ account: String, _ condition: WriteCondition) async throws -> Void
        )? =
            nil,
        remove: (@Sendable (_ account: String, _ condition: WriteCondition) async throws -> Void)? = nil
    ) {
        if let load {
            self.loadClosure = load
        } else {
            self.loadClosure = { account in await store.load(account: account) }
        }
        if let save {
            self.saveClosure = save
        } else {
            self.saveClosure = { session, account, condition in
                try await store.save(session, account: account, condition: condition)
            }
        }
        if let remove {
            self.removeClosure = remove
        } else {
            self.removeClosure = { account, condition in
                try await store.remove(account: account, condition: condition)
            }
        }
        self.exclusiveAccessClosure = { account, body in
            try await store.withExclusiveAccess(account: account) { try await body() }
        }
    }

    /// Reads through the `load` closure.
    ///
    /// - Parameter account: The account key.
    /// - Returns: What the closure returns.
    public func load(account: String) async -> TokenStoreRead {
        await loadClosure(account)
    }

    /// Writes through the `save` closure.
    ///
    /// - Parameters:
    ///   - session: The session.
    ///   - account: The account key.
    ///   - condition: When the write may happen.
    /// - Throws: What the closure throws, as a ``PersistenceError``.
    public func save(
        _ session: StoredSession, account: String, condition: WriteCondition
    ) async throws(PersistenceError) {
        do {
            try await saveClosure(session, account, condition)
        } catch {
            throw Self.persistenceError(error)
        }
    }

    /// Removes through the `remove` closure.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - condition: When the removal may happen.
    /// - Throws: What the closure throws, as a ``PersistenceError``.
    public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        do {
            try await removeClosure(account, condition)
        } catch {
            throw Self.persistenceError(error)
        }
    }

    private static func persistenceError(_ error: any Error) -> PersistenceError {
        if let error = error as? PersistenceError { return error }
        return PersistenceError.writeFailed.with(detail: "\(type(of: error))")
    }

    /// Runs `body` through the `exclusiveAccess` closure, or directly when there is none.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - body: The work to run.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the closure throws; ``PersistenceError/lockFailed`` when the closure
    ///   returns without running `body`.
    public func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        guard let exclusiveAccessClosure else { return try await body() }
        let result = LockedValue<T?>(nil)
        try await exclusiveAccessClosure(account) {
            let value = try await body()
            result.withLock { $0 = value }
        }
        guard let value = result.withLock({ $0.take() }) else { throw PersistenceError.lockFailed }
        return value
    }
}
