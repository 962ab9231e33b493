import AuthToken
import Foundation
public import NetworkRetry
public import Persistence

/// A token store that keeps a session's DPoP key (RFC 9449) in the same record as its refresh token, so the two are
/// written, rotated, shared and deleted together, with the same protection.
///
/// Wrap the session's store in it, and give its ``prover`` to the token endpoint's
/// ``/NetworkRetry/DPoPTransport`` and to the `AuthenticatedClient`:
///
/// ```swift
/// let prover = DPoPProver(key: SoftwareDPoPKey(), now: serverClock.wallClock)
/// let store = DPoPSessionStore(InMemoryTokenStore(), prover: prover)
/// ```
///
/// - Saving a session whose token type is `DPoP` records the prover's key with it (the key that signed the proofs
///   the tokens were bound to).
/// - Loading a session restores its key into the prover. A `DPoP` session whose key did not come back (restored on
///   another device, a lost enclave key, a key that is not the one the token is bound to) is never handed out: it
///   reads as absent, its record is removed, and ``restore(account:)`` and ``lastRestore(account:)`` report
///   ``DPoPRestoreState/keyLost(_:)``, before any request is sent.
/// - Removing the session (a sign-out) gives the prover a fresh key for the next session.
public struct DPoPSessionStore: TokenStore {
    /// The wrapped store.
    package let base: any TokenStore
    /// The prover whose key travels with the session.
    public let prover: DPoPProver
    /// How new keys are made and stored keys restored.
    package let keys: DPoPKeys
    private let states = LockedValue([String: DPoPRestoreState]())
    /// The record and access token last found usable, by account: a store read again (another process's change
    /// check) does not parse the key again.
    private let verified = LockedValue([String: Verified]())

    private struct Verified: Equatable {
        let record: DPoPKeyRecord
        let accessToken: String
    }

    /// Wraps `base`.
    ///
    /// - Parameters:
    ///   - base: The session's store.
    ///   - prover: The prover to keep the key of.
    ///   - keys: How keys are made and restored; ``DPoPKeys/software`` by default.
    public init(_ base: any TokenStore, prover: DPoPProver, keys: DPoPKeys = .software) {
        self.base = base
        self.prover = prover
        self.keys = keys
    }

    /// Reads the stored session and restores its key into ``prover``; call it at launch, before any request.
    ///
    /// - Parameter account: The account key.
    /// - Returns: What was found: no session, a session without DPoP, a session with its key, or one whose key was
    ///   lost (its record is then removed).
    public func restore(account: String) async -> DPoPRestoreState {
        switch await load(account: account) {
        case .found, .absent: return lastRestore(account: account) ?? .noSession
        case .unavailable(let error): return .unavailable(error)
        }
    }

    /// What the latest read of `account` found, if there was one.
    ///
    /// - Parameter account: The account key.
    /// - Returns: The state.
    public func lastRestore(account: String) -> DPoPRestoreState? {
        states.withLock { $0[account] }
    }

    /// Reads through the wrapped store; restores the session's key, and hides a `DPoP` session whose key was lost.
    ///
    /// - Parameter account: The account key.
    /// - Returns: What the wrapped store read, or `.absent` for a session that cannot be used.
    public func load(account: String) async -> TokenStoreRead {
        let read = await base.load(account: account)
        guard case .found(let session) = read else {
            if case .absent = read { record(.noSession, account: account) }
            return read
        }
        let state = check(session, account: account)
        record(state, account: account)
        guard case .keyLost = state else { return read }
        // The record holds a refresh token no request may use: remove it (only this very session).
        try? await base.remove(
            account: account, condition: .session(session.sessionID, generation: session.generation))
        return .absent
    }

    /// Saves through the wrapped store, with ``prover``'s key when the session's token type is `DPoP`.
    ///
    /// - Parameters:
    ///   - session: The session.
    ///   - account: The account key.
    ///   - condition: When the write may happen.
    /// - Throws: What the wrapped store throws.
    public func save(
        _ session: StoredSession, account: String, condition: WriteCondition
    ) async throws(PersistenceError) {
        var session = session
        if isDPoPTokenType(session.token.tokenType) {
            session = session.with(dpopKey: keys.record(prover.key))
        }
        try await base.save(session, account: account, condition: condition)
        if session.dpopKey != nil { record(.restored(prover.thumbprint), account: account) }
    }

    /// Removes through the wrapped store (the key goes with the record), then gives ``prover`` a fresh key.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - condition: When the removal may happen.
    /// - Throws: What the wrapped store throws; the key is kept then.
    public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await base.remove(account: account, condition: condition)
        if let fresh = try? keys.make() { prover.use(fresh) }
        record(.noSession, account: account)
    }

    /// Runs `body` under the wrapped store's exclusive access.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - body: The work.
    /// - Returns: What `body` returns.
    /// - Throws: What the wrapped store or `body` throws.
    public func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try await base.withExclusiveAccess(account: account, body)
    }

    /// Judges a stored session, restoring its key into the prover when it is usable.
    private func check(_ session: StoredSession, account: String) -> DPoPRestoreState {
        guard isDPoPTokenType(session.token.tokenType) else { return .bearerSession }
        guard let record = session.dpopKey else { return .keyLost(.missing) }
        let seen = Verified(record: record, accessToken: session.token.accessToken)
        if verified.withLock({ $0[account] == seen }), prover.thumbprint == record.thumbprint {
            return .restored(record.thumbprint)
        }
        let key: any DPoPKey
        do {
            key = try keys.restore(record)
        } catch {
            return .keyLost(.unreadable)
        }
        let thumbprint = DPoPProver.thumbprint(of: key)
        guard thumbprint == record.thumbprint, Self.boundThumbprint(session.token) ?? thumbprint == thumbprint else {
            return .keyLost(.mismatch)
        }
        if prover.thumbprint != thumbprint { prover.use(key) }
        verified.withLock { $0[account] = seen }
        return .restored(thumbprint)
    }

    /// The `cnf.jkt` of a JWT access token, if it has one.
    private static func boundThumbprint(_ token: AuthToken) -> String? {
        guard let claims = try? JWT(parsing: token.accessToken).claims else { return nil }
        return claims.object("cnf")?["jkt"]?.stringValue
    }

    private func record(_ state: DPoPRestoreState, account: String) {
        states.withLock { $0[account] = state }
    }
}

/// What restoring a session found about its DPoP key.
public enum DPoPRestoreState: Sendable, Hashable {
    /// Why a session's key did not come back.
    public enum KeyLoss: Sendable, Hashable {
        /// The record has no key (restored from a backup without it, or written without one).
        case missing
        /// The key's material could not be used (an enclave reference from another device).
        case unreadable
        /// The key is not the one the session's token is bound to.
        case mismatch
    }

    /// No session is stored.
    case noSession
    /// A session whose tokens are not bound to a key.
    case bearerSession
    /// A `DPoP` session with its key, whose thumbprint is given; the prover signs with it.
    case restored(String)
    /// A `DPoP` session whose key did not come back: it cannot be used, and was removed. Sign in again.
    case keyLost(KeyLoss)
    /// The store could not be read now.
    case unavailable(PersistenceError)
}

/// How DPoP keys are made for new sessions and restored from stored records.
public struct DPoPKeys: Sendable {
    /// Makes a key for a new session.
    package let make: @Sendable () throws -> any DPoPKey

    /// Keys made with `make`.
    ///
    /// - Parameter make: Makes a key for a new session.
    public init(make: @escaping @Sendable () throws -> any DPoPKey) {
        self.make = make
    }

    /// P-256 software keys, on every platform.
    public static let software = DPoPKeys { SoftwareDPoPKey() }

    #if canImport(CryptoKit) && canImport(Security)
        /// Secure Enclave keys where the device has one; software keys elsewhere.
        public static let secureEnclaveWhereAvailable = DPoPKeys { () throws -> any DPoPKey in
            guard SecureEnclaveDPoPKey.isAvailable else { return SoftwareDPoPKey() }
            return try SecureEnclaveDPoPKey()
        }
    #endif

    /// The record a key is stored as; `nil` for a key of another kind (such a session's key does not come back).
    package func record(_ key: any DPoPKey) -> DPoPKeyRecord? {
        let thumbprint = DPoPProver.thumbprint(of: key)
        if let software = key as? SoftwareDPoPKey {
            return DPoPKeyRecord(kind: .software, material: software.rawRepresentation, thumbprint: thumbprint)
        }
        #if canImport(CryptoKit) && canImport(Security)
            if let enclave = key as? SecureEnclaveDPoPKey {
                return DPoPKeyRecord(
                    kind: .secureEnclave, material: enclave.dataRepresentation, thumbprint: thumbprint)
            }
        #endif
        return nil
    }

    /// The key a record holds.
    package func restore(_ record: DPoPKeyRecord) throws -> any DPoPKey {
        switch record.kind {
        case .software:
            return try SoftwareDPoPKey(rawRepresentation: record.material)
        case .secureEnclave:
            #if canImport(CryptoKit) && canImport(Security)
                return try SecureEnclaveDPoPKey(dataRepresentation: record.material)
            #else
                throw PersistenceError.corrupt.with(detail: "a Secure Enclave key on a device without one")
            #endif
        default:
            throw PersistenceError.corrupt.with(detail: "unknown DPoP key kind")
        }
    }
}
