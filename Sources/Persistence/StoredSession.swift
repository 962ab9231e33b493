public import AuthToken

/// A session as a store keeps it: the token pair, the user it belongs to, and its generation.
public struct StoredSession: Sendable, Hashable, Codable {
    /// The token pair.
    public let token: AuthToken
    /// The user profile ID the session belongs to, if known (the FitIQ app keeps one).
    public let userID: String?
    /// A number that grows with every write of this account's session. Conditional writes compare it,
    /// so a refresh that started from an older generation cannot overwrite a newer session.
    public let generation: UInt64

    /// Creates a stored session.
    ///
    /// - Parameters:
    ///   - token: The token pair.
    ///   - userID: The user profile ID, if known.
    ///   - generation: The generation of this write.
    public init(token: AuthToken, userID: String? = nil, generation: UInt64) {
        self.token = token
        self.userID = userID
        self.generation = generation
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

/// When a conditional write may happen, judged against the generation stored now.
public struct WriteCondition: Sendable, Hashable {
    private enum Kind: Hashable { case always, absent, generation(UInt64) }
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

    /// Whether the condition holds when `current` is the generation stored now (`nil` when absent).
    ///
    /// - Parameter current: The stored generation, or `nil` when nothing is stored.
    /// - Returns: `true` when the write may go ahead.
    public func allows(current: UInt64?) -> Bool {
        switch kind {
        case .always: true
        case .absent: current == nil
        case .generation(let expected): current == expected
        }
    }
}
