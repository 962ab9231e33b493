public import AuthToken
public import Foundation

/// A session as a store keeps it: the token pair, the user it belongs to, and its generation.
public struct StoredSession: Sendable, Hashable, Codable {
    /// The token pair.
    public let token: AuthToken
    /// The user profile ID the session belongs to, if known (the FitIQ app keeps one).
    public let userID: String?
    /// A number that grows with every write of this account's session. Conditional writes compare it,
    /// so a refresh that started from an older generation cannot overwrite a newer session.
    public let generation: UInt64
    /// The session's identity: made at sign-in (128 random bits), kept by every refresh of that session, never
    /// reused. A stored session with another identity is another session, whatever its generation. `nil` for a
    /// session stored before identities existed.
    public let sessionID: String?
    /// The session's DPoP key (RFC 9449), kept in the same record as the refresh token, if the session's tokens are
    /// bound to one.
    public let dpopKey: DPoPKeyRecord?
    /// The token server's clock minus the device's, in seconds, as the client that wrote the session had learned it
    /// (`nil` when it had learned none). A process that restores the session judges expiry by the server's time from
    /// its first read, before it talks to the token server. It holds no secret.
    public let serverTimeOffset: TimeInterval?
    /// When this session's most recent token requests that a server answered with a transient failure (a 5xx, a 429)
    /// were made, oldest first, by the writer's wall clock (the server's time when it had learned it); `nil` when none
    /// since the session's last refresh. Every process and replica sharing the session counts them in its failure
    /// budget (`TokenRefreshClient.Backoff.failureBudget`), so the budget is the session's, not each process's.
    /// TokenRefreshClient keeps it bounded (at most the budget's size, none older than its window) and checks it on
    /// read: a record that cannot be decoded loads as `nil`, and the session with it. It holds no secret.
    public let recentServerFailures: [Date]?

    /// Creates a stored session.
    ///
    /// - Parameters:
    ///   - token: The token pair.
    ///   - userID: The user profile ID, if known.
    ///   - generation: The generation of this write.
    ///   - sessionID: The session's identity (``newSessionID()`` at sign-in, the same for its refreshes).
    public init(token: AuthToken, userID: String? = nil, generation: UInt64, sessionID: String? = nil) {
        self.init(token: token, userID: userID, generation: generation, sessionID: sessionID, dpopKey: nil)
    }

    /// Creates a stored session whose tokens are bound to a DPoP key.
    ///
    /// - Parameters:
    ///   - token: The token pair.
    ///   - userID: The user profile ID, if known.
    ///   - generation: The generation of this write.
    ///   - sessionID: The session's identity.
    ///   - dpopKey: The session's DPoP key, if its tokens are bound to one.
    ///   - serverTimeOffset: The token server's clock minus the device's (seconds), if the writer had learned it.
    ///   - recentServerFailures: When the session's recent token requests that a server answered with a transient
    ///     failure were made, oldest first, if any.
    public init(
        token: AuthToken, userID: String? = nil, generation: UInt64, sessionID: String? = nil,
        dpopKey: DPoPKeyRecord?, serverTimeOffset: TimeInterval? = nil, recentServerFailures: [Date]? = nil
    ) {
        self.token = token
        self.userID = userID
        self.generation = generation
        self.sessionID = sessionID
        self.dpopKey = dpopKey
        self.serverTimeOffset = serverTimeOffset
        self.recentServerFailures = recentServerFailures
    }

    /// Decodes a stored session. A record of server failures that does not decode is read as none: the session
    /// loads all the same.
    ///
    /// - Parameter decoder: The decoder to read from.
    /// - Throws: `DecodingError` when the session itself does not decode.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            token: try container.decode(AuthToken.self, forKey: .token),
            userID: try container.decodeIfPresent(String.self, forKey: .userID),
            generation: try container.decode(UInt64.self, forKey: .generation),
            sessionID: try container.decodeIfPresent(String.self, forKey: .sessionID),
            dpopKey: try container.decodeIfPresent(DPoPKeyRecord.self, forKey: .dpopKey),
            serverTimeOffset: try container.decodeIfPresent(TimeInterval.self, forKey: .serverTimeOffset),
            recentServerFailures: (try? container.decodeIfPresent([Date].self, forKey: .recentServerFailures)) ?? nil)
    }

    /// A new session identity: 128 bits from the system's secure random generator, as 32 hex digits.
    public static func newSessionID() -> String {
        var generator = SystemRandomNumberGenerator()
        let words = [generator.next(), generator.next()] as [UInt64]
        return words.map { word in
            let text = String(word, radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }.joined()
    }

    /// This session with another generation (its identity kept).
    package func with(generation: UInt64) -> StoredSession {
        StoredSession(
            token: token, userID: userID, generation: generation, sessionID: sessionID, dpopKey: dpopKey,
            serverTimeOffset: serverTimeOffset, recentServerFailures: recentServerFailures)
    }

    /// This session with `dpopKey` as its DPoP key (everything else kept).
    package func with(dpopKey: DPoPKeyRecord?) -> StoredSession {
        StoredSession(
            token: token, userID: userID, generation: generation, sessionID: sessionID, dpopKey: dpopKey,
            serverTimeOffset: serverTimeOffset, recentServerFailures: recentServerFailures)
    }

    /// This session with `serverTimeOffset` as the server's clock offset (everything else kept).
    package func with(serverTimeOffset: TimeInterval?) -> StoredSession {
        StoredSession(
            token: token, userID: userID, generation: generation, sessionID: sessionID, dpopKey: dpopKey,
            serverTimeOffset: serverTimeOffset, recentServerFailures: recentServerFailures)
    }

    /// This session with `recentServerFailures` as its record of server failures (everything else kept).
    package func with(recentServerFailures: [Date]?) -> StoredSession {
        StoredSession(
            token: token, userID: userID, generation: generation, sessionID: sessionID, dpopKey: dpopKey,
            serverTimeOffset: serverTimeOffset, recentServerFailures: recentServerFailures)
    }
}

/// What a store read found.
public enum TokenStoreRead: Sendable {
    /// A session is stored.
    case found(StoredSession)
    /// No session is stored: the account is signed out.
    case absent
    /// The store could not be read right now (locked, unreadable, corrupt). This is not "signed out".
    case unavailable(PersistenceError)
}

/// When a conditional write may happen, judged against the generation (and identity) stored now.
public struct WriteCondition: Sendable, Hashable {
    private enum Kind: Hashable {
        case always, absent, generation(UInt64), session(UInt64, String?), sessionAtAnyGeneration(String?)
    }
    private let kind: Kind

    /// Write whatever is stored.
    public static let always = WriteCondition(kind: .always)
    /// Write only when nothing is stored.
    public static let absent = WriteCondition(kind: .absent)
    /// Write only when the stored session has exactly this generation.
    ///
    /// - Parameter generation: The generation the writer last saw.
    /// - Returns: The condition.
    public static func generation(_ generation: UInt64) -> WriteCondition {
        WriteCondition(kind: .generation(generation))
    }

    /// Write only when the stored session is this one: this identity (`nil`: one stored without an identity) and
    /// exactly this generation. A session signed in later never matches, even at the same generation.
    ///
    /// - Parameters:
    ///   - sessionID: The identity of the session the writer holds.
    ///   - generation: The generation the writer last saw.
    /// - Returns: The condition.
    public static func session(_ sessionID: String?, generation: UInt64) -> WriteCondition {
        WriteCondition(kind: .session(generation, sessionID))
    }

    /// Write only when the stored session is this one at any generation (`sessionID` `nil`: one stored without an
    /// identity), or nothing is stored. A session signed in later never matches; this one refreshed by another
    /// process since does. A sign-out removes the session it ended with it: whatever generation the session has
    /// reached, and never a session signed in after it.
    ///
    /// - Parameter sessionID: The identity of the session the writer held.
    /// - Returns: The condition.
    public static func sessionAtAnyGeneration(_ sessionID: String?) -> WriteCondition {
        WriteCondition(kind: .sessionAtAnyGeneration(sessionID))
    }

    /// Whether the condition holds when `current` is the session stored now (`nil` when absent). Stores call this
    /// one, so a condition on a session's identity is judged too.
    ///
    /// - Parameter current: The stored session, or `nil` when nothing is stored.
    /// - Returns: `true` when the write may go ahead.
    public func allows(stored current: StoredSession?) -> Bool {
        allows(generation: current?.generation, sessionID: current?.sessionID)
    }

    /// Whether the condition holds when the stored session has `generation` and `sessionID` (`generation` `nil` when
    /// nothing is stored).
    ///
    /// - Parameters:
    ///   - current: The stored generation, or `nil` when nothing is stored.
    ///   - sessionID: The stored session's identity, if it has one.
    /// - Returns: `true` when the write may go ahead.
    public func allows(generation current: UInt64?, sessionID: String?) -> Bool {
        switch kind {
        case .always: true
        case .absent: current == nil
        case .generation(let expected): current == expected
        case .session(let expected, let identity): current == expected && sessionID == identity
        case .sessionAtAnyGeneration(let identity): current == nil || sessionID == identity
        }
    }

    /// Whether the condition holds when `current` is the generation stored now (`nil` when absent), for a store that
    /// keeps no session identity: a condition on an identity is judged by its generation alone, so
    /// ``sessionAtAnyGeneration(_:)`` holds whatever is stored (such a store cannot tell one session from another).
    ///
    /// - Parameter current: The stored generation, or `nil` when nothing is stored.
    /// - Returns: `true` when the write may go ahead.
    public func allows(current: UInt64?) -> Bool {
        switch kind {
        case .always: true
        case .absent: current == nil
        case .generation(let expected), .session(let expected, _): current == expected
        case .sessionAtAnyGeneration: true
        }
    }
}
