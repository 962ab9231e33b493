import AuthToken
public import Foundation

/// One line of a client's session journal: what happened to the session, when, and why.
///
/// An entry holds no token text and no user ID: the kind of event, the sign-out reason, the class of the error,
/// and short fingerprints of the tokens involved. It is safe to attach to a support ticket.
public struct SessionJournalEntry: Sendable, Hashable, CustomStringConvertible {
    /// When it happened, by the client's wall clock.
    public let time: Date
    /// What happened (signed in, token refreshed, refresh failed, signed out, ...).
    public let kind: AuthEvent.Kind
    /// Why the session ended, for a sign-out.
    public let reason: AuthEvent.SignOutReason?
    /// The class of the error involved, such as `TokenRefreshError.refreshTokenRejected`, with the type of its
    /// underlying cause (`PersistenceError`, `URLError`) when there is one; never the error's text.
    public let errorClass: String?
    /// The fingerprint of the token the entry is about: the new one for a refresh or sign-in, the last one the
    /// session held for a sign-out.
    public let tokenFingerprint: String?
    /// The server's clock minus the device's, in seconds, when expiry is judged by server time (a
    /// ``TokenRefreshClient/Configuration/serverClock``); `nil` otherwise.
    public var serverTimeOffset: TimeInterval? = nil

    /// One line: the time (ISO 8601), the kind, and the reason, error class, fingerprint and server time offset when
    /// present.
    public var description: String {
        var parts = [time.formatted(.iso8601), "\(kind)"]
        if let reason { parts.append("reason=\(reason)") }
        if let errorClass { parts.append("error=\(errorClass)") }
        if let tokenFingerprint { parts.append("token=\(tokenFingerprint)") }
        if let serverTimeOffset { parts.append("serverTimeOffset=\(Int(serverTimeOffset.rounded()))s") }
        return parts.joined(separator: " ")
    }
}

/// The bounded journal of one client's session transitions (see ``TokenRefreshClient/sessionJournal()``).
struct SessionJournal: Sendable {
    /// How many entries are kept; older ones are dropped first.
    static let capacity = 128

    private(set) var entries: [SessionJournalEntry] = []
    /// The fingerprint of the last token an entry named, for the sign-out that ends it.
    private var lastFingerprint: String?

    /// Records `event` at `time`, with the server time offset when one is known.
    mutating func record(_ event: AuthEvent, at time: Date, serverTimeOffset: TimeInterval? = nil) {
        let fingerprint = event.tokenFingerprint ?? (event.kind == .signedOut ? lastFingerprint : nil)
        if let named = event.tokenFingerprint { lastFingerprint = named }
        if event.kind == .signedOut { lastFingerprint = nil }
        let entry = SessionJournalEntry(
            time: time, kind: event.kind, reason: event.reason, errorClass: event.error.map(Self.errorClass),
            tokenFingerprint: fingerprint, serverTimeOffset: serverTimeOffset)
        if entries.count == Self.capacity { entries.removeFirst() }
        entries.append(entry)
    }

    /// `TokenRefreshError.<code>`, with the OAuth error code, the HTTP status and the underlying cause's type when
    /// present: never the text of the error or of its cause.
    static func errorClass(_ error: TokenRefreshError) -> String {
        var parts: [String] = []
        if let oauthError = error.oauthError { parts.append(oauthError) }
        if let status = error.status { parts.append("HTTP \(status)") }
        if let underlying = error.underlying { parts.append(String(describing: type(of: underlying))) }
        return parts.isEmpty ? error.name : "\(error.name)(\(parts.joined(separator: ", ")))"
    }
}

extension TokenRefreshClient {
    /// The journal of this client's session: every sign-in, refresh, adoption, failure and sign-out, oldest first,
    /// with its time, reason, error class and token fingerprints. It answers "why was I signed out?": the last
    /// `signedOut` entry says why, and the entries before it say what led there.
    ///
    /// The journal keeps the newest 128 entries and holds no token text and no user ID.
    ///
    /// - Returns: The entries, oldest first.
    public nonisolated func sessionJournal() -> [SessionJournalEntry] {
        subscribers.withLock { $0.journal.entries }
    }

    /// The journal as text for a support ticket: one entry per line, oldest first (see ``sessionJournal()``).
    ///
    /// - Returns: The lines, joined with newlines.
    public nonisolated func exportSessionJournal() -> String {
        sessionJournal().map(\.description).joined(separator: "\n")
    }
}
