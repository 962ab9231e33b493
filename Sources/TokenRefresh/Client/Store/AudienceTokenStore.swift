import AuthToken
import Foundation
import Persistence

// One session, one access token per API (RFC 8707 resource indicators, Auth0's multi-resource refresh tokens).
//
// Every API (an "audience": a resource and its scope) gets its own `TokenRefreshClient`, so single flight is per
// audience by construction: a refresh for the billing API is never merged with one for the profile API, and no
// caller can be answered with another API's token. The clients share the session through `AudienceTokenStore`, a
// view over one store in which each client sees the session as if it were its own: the shared refresh token and
// generation, with its own audience's access token. The client's rules then do the cross-audience work exactly as
// they do across processes: a refresh runs under the shared exclusive access, re-reads the store first, adopts a
// refresh token another audience rotated, presents it for its own audience, and writes the rotation conditional on
// the shared generation before answering. So the refresh token is rotated once per refresh, persisted once per
// rotation, and never presented twice.
//
// The stored record is one session (one atomic, generation-conditional write in any store): the shared refresh
// token, the user ID and the generation, with the access tokens of every audience encoded in its access-token field
// (`AudienceBundle`). That record's own expiry is in the past, so a client that is not a view never hands it out.

/// The access tokens of one session, one per audience, as they are kept in the stored record.
struct AudienceBundle: Codable, Sendable, Equatable {
    /// Identifies the session the tokens belong to: a new one at every sign-in, kept across rotations.
    var family: String
    /// Access tokens by audience slot (the key with the resource, audience and scope asked for), without refresh
    /// tokens.
    var tokens: [String: AuthToken]

    /// Marks a stored access-token field that holds a bundle; no access token starts with it.
    static let marker = "tokenkit-audiences-v1."

    /// The bundle `stored` holds, or `nil` for a session that is not a bundle (one stored by a client of a single
    /// audience, or by an app before it used audiences): its access token is for no known audience.
    static func decode(_ stored: StoredSession) -> AudienceBundle? {
        let field = stored.token.accessToken
        guard field.hasPrefix(marker), let data = Data(base64Encoded: String(field.dropFirst(marker.count))) else {
            return nil
        }
        return try? JSONDecoder().decode(AudienceBundle.self, from: data)
    }

    /// The stored record for `session` with this bundle: the shared refresh token, user and `generation`, and an
    /// expiry in the past.
    func record(for session: StoredSession, generation: UInt64) throws(PersistenceError) -> StoredSession {
        guard let data = try? JSONEncoder().encode(self) else { throw PersistenceError.writeFailed }
        let token = AuthToken(
            accessToken: Self.marker + data.base64EncodedString(), refreshToken: session.token.refreshToken,
            receivedAt: session.token.receivedAt, lifetime: 0)
        return StoredSession(
            token: token, userID: session.userID, generation: generation, sessionID: session.sessionID, dpopKey: nil,
            serverTimeOffset: session.serverTimeOffset, recentServerFailures: session.recentServerFailures)
    }
}

/// What the views of one group of audience clients share: the store, the in-process lock, and the clients (to end
/// their sessions when one signs out, and to start them when one signs in).
final class AudienceHub: Sendable {
    let base: any TokenStore
    /// The hub's namespace in the process's locks (``ProcessLocalLocks``): an account's key there is this and the
    /// account, so two hubs over one account do not exclude each other, and neither excludes the store's own lock.
    let lockNamespace = "TokenKit.AudienceHub." + UUID().uuidString + "/"
    private let clients = LockedValue<[String: WeakClient]>([:])
    /// A record whose write failed, by account: the newest state of the session (a rotated refresh token that only
    /// memory holds), written before anything else is read or written (see ``AudienceTokenStore``).
    let pending = LockedValue<[String: Pending]>([:])
    /// How many times a view stored a new session or removed one: a client's read that started before the count
    /// changed may have found an ended session, and is dropped (see `TokenRefreshClient.adoptAudienceSession(in:)`).
    private let changes = LockedValue<UInt64>(0)

    struct Pending: Sendable {
        let record: StoredSession
        let condition: WriteCondition
    }

    struct WeakClient: @unchecked Sendable {
        weak var client: TokenRefreshClient?
    }

    init(base: any TokenStore) {
        self.base = base
    }

    func register(_ client: TokenRefreshClient, for key: String) {
        clients.withLock { $0[key] = WeakClient(client: client) }
    }

    /// The number of sessions stored or removed so far.
    var sessionChanges: UInt64 { changes.withLock { $0 } }

    /// A view stored a new session or removed one.
    func sessionChanged() { changes.withLock { $0 &+= 1 } }

    /// The clients of the other audiences than `key`.
    func siblings(of key: String) -> [TokenRefreshClient] {
        clients.withLock { clients in clients.filter { $0.key != key }.compactMap(\.value.client) }
    }
}

/// One audience's view of the shared session (see the comment at the top of this file).
///
/// - ``load(account:)`` answers the shared refresh token and generation with this audience's access token. When
///   this audience has none yet (or the stored session is not a bundle), the access token is empty and expired in
///   the past, so the client refreshes for this audience before answering anyone: another audience's token is
///   never in what this view returns.
/// - ``save(_:account:condition:)`` judges `condition` against the stored generation, keeps the other audiences'
///   tokens on a rotation of the same session, and drops them at a new session (a sign-in writes unconditionally or
///   over nothing) or another user's.
/// - ``remove(account:condition:)`` ends the session for every audience, also when another audience rotated it
///   since this client read it.
/// - ``withExclusiveAccess(account:_:)`` is shared by every audience in the process, inside the store's own.
struct AudienceTokenStore: TokenStore {
    let hub: AudienceHub
    let key: String
    let now: @Sendable () -> Date
    private let memory = LockedValue(Memory())

    struct Memory {
        /// The session this view last read or wrote.
        var family: String?
        /// The last save lost to a newer session: the client re-reads next, and must not be answered with a token
        /// that is missing or expired.
        var conflicted = false
    }

    init(hub: AudienceHub, key: String, now: @escaping @Sendable () -> Date) {
        self.hub = hub
        self.key = key
        self.now = now
    }

    func load(account: String) async -> TokenStoreRead {
        let afterConflict = memory.withLock { memory in
            defer { memory.conflicted = false }
            return memory.conflicted
        }
        do {
            try await flushPending(account)
        } catch {
            // The newest refresh token is in memory only: the one stored may be consumed, so nothing is presented.
            return .unavailable(error)
        }
        let read = await hub.base.load(account: account)
        guard case .found(let stored) = read else { return read }
        let bundle = AudienceBundle.decode(stored)
        memory.withLock { $0.family = bundle?.family }
        let own = bundle?.tokens[key]
        if afterConflict, own.map({ $0.isExpired(at: now()) }) ?? true {
            // Re-read after a conflict is answered as it stands: with nothing of this audience's to answer, say the
            // store could not serve it (the client keeps its session and refreshes at the next call).
            return .unavailable(.unavailable)
        }
        let refreshToken = stored.token.refreshToken
        let token =
            own?.replacingRefreshToken(refreshToken)
            ?? AuthToken(accessToken: "", refreshToken: refreshToken, receivedAt: .distantPast, lifetime: 0)
        return .found(
            StoredSession(
                token: token, userID: stored.userID, generation: stored.generation, sessionID: stored.sessionID,
                dpopKey: nil, serverTimeOffset: stored.serverTimeOffset,
                recentServerFailures: stored.recentServerFailures))
    }

    func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await flushPending(account)
        let read = await hub.base.load(account: account)
        var current: StoredSession?
        switch read {
        case .found(let stored): current = stored
        case .absent: current = nil
        case .unavailable(let error): throw error
        }
        if let current, isStored(session, in: current) { return }  // a retried write that another one landed
        guard condition.allows(stored: current) else {
            memory.withLock { $0.conflicted = true }
            throw .conflict
        }
        // A write that is allowed over nothing stored (a sign-in's unconditional one, or the first) starts a new
        // session: no other audience's token of an older session is carried into it.
        let startsSession = condition.allows(current: nil)
        var bundle = current.flatMap(AudienceBundle.decode)
        if startsSession || Self.otherUser(current, session) { bundle = nil }
        var next = bundle ?? AudienceBundle(family: UUID().uuidString, tokens: [:])
        let subject = session.token.claims?.subject
        next.tokens = next.tokens.filter { other in
            guard let subject, let otherSubject = other.value.claims?.subject else { return true }
            return otherSubject == subject
        }
        next.tokens[key] = session.token.replacingRefreshToken(nil)
        // A new session's generation is above every stored one, so every other audience's client (and process) sees
        // it as newer than what it holds, whatever this client knew.
        let generation = startsSession ? max(session.generation, (current?.generation ?? 0) &+ 1) : session.generation
        let record = try next.record(for: session, generation: generation)
        do {
            try await hub.base.save(record, account: account, condition: condition)
        } catch .conflict {
            memory.withLock { $0.conflicted = true }
            throw .conflict
        } catch {
            // Rule 4 across the audiences: the rotated refresh token must not be lost to another audience's refresh,
            // which would present the consumed one still stored. Every view writes this first. A new session's write
            // is never kept for later: its client reports the failure (or retries it itself), and a sign-in that
            // failed must never land over a session stored afterwards.
            if !startsSession {
                hub.pending.withLock { $0[account] = AudienceHub.Pending(record: record, condition: condition) }
            }
            throw error
        }
        memory.withLock { $0.family = next.family }
        if startsSession { await startSiblings() }
    }

    func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        // The session ends: a write still pending for it must never land after this.
        hub.pending.withLock { $0[account] = nil }
        let read = await hub.base.load(account: account)
        guard case .found(let stored) = read else {
            if case .unavailable(let error) = read { throw error }
            return
        }
        let family = memory.withLock { $0.family }
        let removal: WriteCondition
        if condition.allows(stored: stored) {
            removal = condition
        } else if let family, AudienceBundle.decode(stored)?.family == family {
            // Another audience rotated this same session since this client read it: it ends for every audience.
            removal = .session(stored.sessionID, generation: stored.generation)
        } else {
            throw .conflict
        }
        do {
            try await hub.base.remove(account: account, condition: removal)
        } catch .conflict {
            throw .conflict
        } catch {
            // The session ends in memory whether or not the store let go of it (its client retries the removal):
            // no other audience's client goes on handing out its tokens.
            await endSiblings()
            throw error
        }
        await endSiblings()
    }

    func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        // The views of one hub take turns in this process (first come, first served; a wait cancelled throws
        // `lockFailed`), then the store's own lock excludes other processes.
        try await ProcessLocalLocks.shared.withLock(hub.lockNamespace + account) {
            try await hub.base.withExclusiveAccess(account: account, body)
        }
    }

    /// Writes the record whose write failed before, if there is one. One that lost to a newer session is dropped.
    ///
    /// - Throws: The store's error when the write fails again (the record stays pending).
    private func flushPending(_ account: String) async throws(PersistenceError) {
        guard let pending = hub.pending.withLock({ $0[account] }) else { return }
        do {
            try await hub.base.save(pending.record, account: account, condition: pending.condition)
        } catch .conflict {
            // A newer session was stored meanwhile: it wins.
        }
        hub.pending.withLock { pendings in
            if pendings[account]?.record == pending.record { pendings[account] = nil }
        }
    }

    /// Whether `current`, the stored record, is `session` written already (a write that was retried).
    private func isStored(_ session: StoredSession, in current: StoredSession) -> Bool {
        current.generation == session.generation && current.sessionID == session.sessionID
            && current.userID == session.userID
            && current.token.refreshToken == session.token.refreshToken
            && AudienceBundle.decode(current)?.tokens[key]?.accessToken == session.token.accessToken
            && current.recentServerFailures == session.recentServerFailures
    }

    /// Whether `session` is another user's than `stored` (both user IDs known and different).
    private static func otherUser(_ stored: StoredSession?, _ session: StoredSession) -> Bool {
        guard let before = stored?.userID, let after = session.userID else { return false }
        return before != after
    }

    /// The session was removed: the other audiences' clients end theirs too, so none hands out a token of a session
    /// that was signed out. They find the store empty, so this runs once.
    private func endSiblings() async {
        hub.sessionChanged()
        for sibling in hub.siblings(of: key) { await sibling.endAudienceSession() }
    }

    /// A new session was stored: the other audiences' clients that read "signed out" take it up.
    private func startSiblings() async {
        hub.sessionChanged()
        for sibling in hub.siblings(of: key) { await sibling.adoptAudienceSession(in: hub) }
    }
}

extension AudienceTokenStore {
    /// Where the access token of `strategy`, the app's API `key`, is kept in the shared session: by the key and, for
    /// an OAuth strategy, the resource, audience and scope it asks for (scopes in any order). A client that asks for
    /// another API or scope under the same key (in another process, or another version of the app) never reads it.
    static func slot(_ key: String, _ strategy: any RefreshStrategy) -> String {
        guard let oauth = strategy as? OAuthRefreshStrategy else { return key }
        let scope = oauth.scope.map { $0.split(separator: " ").map(String.init).sorted().joined(separator: " ") }
        let parts = [key, oauth.resource?.absoluteString ?? "", oauth.audience ?? "", scope ?? ""]
        guard let encoded = try? JSONEncoder().encode(parts) else { return key }
        return String(decoding: encoded, as: UTF8.self)
    }
}
