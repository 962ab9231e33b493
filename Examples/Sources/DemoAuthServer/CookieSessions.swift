import Crypto
import Foundation
import Logging
import Synchronization

/// The BetterAuth-style accounts and cookie sessions of the demo server (see ``DemoAuthServer/BetterAuth``).
///
/// All state sits behind one `Mutex`. Sessions are keyed by the SHA-256 of the cookie value, so the table never
/// holds a usable cookie; log lines carry user IDs, session IDs and counts, never a cookie or a password.
final class CookieSessions: Sendable {
    /// An account made by sign-up.
    struct Account: Sendable {
        let id: String
        let email: String
        let username: String
        let name: String
        /// Demo only: the password in clear, in memory, never logged.
        let password: String
        let createdAt: Date
    }

    /// One signed-in device.
    struct Session: Sendable {
        let id: String
        let userID: String
        let createdAt: Date
        var updatedAt: Date
        var expiresAt: Date
    }

    /// What a sign-up or sign-in produced.
    enum Outcome: Sendable {
        /// A new session: the cookie value to set, the session and its account.
        case session(cookie: String, Session, Account)
        /// Refused with seed 004's `{"error": ...}` text and this status.
        case refused(error: String, status: Int)
    }

    /// A valid session found from a cookie, and whether it was just renewed (send `Set-Cookie` again).
    struct Found: Sendable {
        let session: Session
        let account: Account
        let renewed: Bool
    }

    private struct State {
        var accounts: [String: Account] = [:]
        var sessions: [String: Session] = [:]
        var stats = DemoAuthServer.CookieSessionStats()
        var nextID = 1
    }

    let configuration: DemoAuthServer.BetterAuth
    private let now: @Sendable () -> Date
    private let logger: Logger
    private let state = Mutex(State())

    init(configuration: DemoAuthServer.BetterAuth, now: @escaping @Sendable () -> Date, logger: Logger) {
        self.configuration = configuration
        self.now = now
        self.logger = logger
    }

    var stats: DemoAuthServer.CookieSessionStats { state.withLock { $0.stats } }

    private var lifetime: TimeInterval { TimeInterval(configuration.sessionLifetime.wholeSeconds) }
    private var updateAge: TimeInterval { TimeInterval(configuration.updateAge.wholeSeconds) }

    // MARK: Sign-up and sign-in

    /// Creates an account and its first session. The server checks what the client checks (seed 004: the
    /// server stays the authority) and that the username and e-mail are free.
    func signUp(email: String, username: String, name: String, password: String) -> Outcome {
        if let problem = Self.problem(email: email, username: username, name: name, password: password) {
            state.withLock { $0.stats.refusals += 1 }
            return .refused(error: problem, status: 400)
        }
        let outcome: Outcome = state.withLock { state in
            if state.accounts.values.contains(where: { $0.username.lowercased() == username.lowercased() }) {
                state.stats.refusals += 1
                return .refused(error: "Username already exists", status: 422)
            }
            if state.accounts.values.contains(where: { $0.email.lowercased() == email.lowercased() }) {
                state.stats.refusals += 1
                return .refused(error: "Email already exists", status: 422)
            }
            let account = Account(
                id: "auth-user-\(state.nextID)", email: email, username: username, name: name, password: password,
                createdAt: now())
            state.nextID += 1
            state.accounts[account.id] = account
            state.stats.signUps += 1
            let (cookie, session) = startSession(for: account, in: &state)
            return .session(cookie: cookie, session, account)
        }
        if case .session(_, let session, let account) = outcome {
            logger.info("cookie sign-up", metadata: ["user": "\(account.id)", "session": "\(session.id)"])
        }
        return outcome
    }

    /// Signs in by username or e-mail (whichever is given) and starts a new session.
    func signIn(username: String?, email: String?, password: String) -> Outcome {
        let outcome: Outcome = state.withLock { state in
            let account = state.accounts.values.first { account in
                if let username { return account.username.lowercased() == username.lowercased() }
                if let email { return account.email.lowercased() == email.lowercased() }
                return false
            }
            guard let account, account.password == password else {
                state.stats.refusals += 1
                return .refused(error: "Invalid credentials", status: 401)
            }
            state.stats.signIns += 1
            let (cookie, session) = startSession(for: account, in: &state)
            return .session(cookie: cookie, session, account)
        }
        switch outcome {
        case .session(_, let session, let account):
            logger.info("cookie sign-in", metadata: ["user": "\(account.id)", "session": "\(session.id)"])
        case .refused:
            logger.info("cookie sign-in refused")
        }
        return outcome
    }

    private func startSession(for account: Account, in state: inout State) -> (String, Session) {
        let cookie = Self.randomCookieValue()
        let start = now()
        let session = Session(
            id: "session-\(state.nextID)", userID: account.id, createdAt: start, updatedAt: start,
            expiresAt: start.addingTimeInterval(lifetime))
        state.nextID += 1
        state.sessions[Self.key(cookie)] = session
        return (cookie, session)
    }

    // MARK: Sessions

    /// The valid session the cookie value names, renewed when ``DemoAuthServer/BetterAuth/updateAge`` has passed;
    /// `nil` when there is none (unknown, ended, expired: an expired one is removed).
    func session(cookie: String?, countingCheck: Bool) -> Found? {
        let found: Found? = state.withLock { state in
            if countingCheck { state.stats.sessionChecks += 1 }
            guard let cookie, !cookie.isEmpty else { return nil }
            let key = Self.key(cookie)
            guard var session = state.sessions[key], let account = state.accounts[session.userID] else { return nil }
            let current = now()
            guard session.expiresAt > current else {
                state.sessions[key] = nil
                state.stats.sessionsEnded += 1
                return nil
            }
            var renewed = false
            if current >= session.updatedAt.addingTimeInterval(updateAge) {
                session.updatedAt = current
                session.expiresAt = current.addingTimeInterval(lifetime)
                state.sessions[key] = session
                state.stats.renewals += 1
                renewed = true
            }
            return Found(session: session, account: account, renewed: renewed)
        }
        if let found, found.renewed {
            logger.debug("cookie session renewed", metadata: ["session": "\(found.session.id)"])
        }
        return found
    }

    /// Counts a protected request answered 401.
    func countUnauthorized() { state.withLock { $0.stats.unauthorized += 1 } }

    /// Ends the session the cookie names (sign-out). Unknown cookies end nothing.
    func signOut(cookie: String?) {
        guard let cookie else { return }
        let ended = state.withLock { state -> String? in
            guard let session = state.sessions.removeValue(forKey: Self.key(cookie)) else { return nil }
            state.stats.sessionsEnded += 1
            return session.id
        }
        if let ended { logger.info("cookie sign-out", metadata: ["session": "\(ended)"]) }
    }

    /// Ends every session of `userID` (or every session): a sign-out on every device.
    func invalidateAll(userID: String?, reason: String) -> Int {
        let count = state.withLock { state in
            let doomed = state.sessions.filter { userID == nil || $0.value.userID == userID }.keys
            for key in doomed { state.sessions[key] = nil }
            state.stats.sessionsEnded += doomed.count
            return doomed.count
        }
        logger.info(
            "cookie sessions invalidated",
            metadata: ["user": "\(userID ?? "everyone")", "sessions": "\(count)", "reason": "\(reason)"])
        return count
    }

    /// Deletes the account and every session of it.
    func deleteAccount(userID: String) -> Int {
        state.withLock { _ = $0.accounts.removeValue(forKey: userID) }
        return invalidateAll(userID: userID, reason: "account deleted")
    }

    /// The ID of the account with this username.
    func accountID(username: String) -> String? {
        state.withLock { state in state.accounts.values.first { $0.username == username }?.id }
    }

    // MARK: Cookies

    /// The `Set-Cookie` value that stores `cookie` for the session's remaining lifetime (HttpOnly, Lax).
    func setCookie(_ cookie: String, expiresAt: Date) -> String {
        let maxAge = max(0, Int(expiresAt.timeIntervalSince(now()).rounded(.up)))
        return "\(configuration.cookieName)=\(cookie); Max-Age=\(maxAge); Path=/; HttpOnly; SameSite=Lax"
            + (configuration.secureCookie ? "; Secure" : "")
    }

    /// The `Set-Cookie` value that deletes the cookie.
    var deleteCookie: String {
        "\(configuration.cookieName)=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax"
            + (configuration.secureCookie ? "; Secure" : "")
    }

    /// The session cookie's value in a `Cookie` header (`a=1; better-auth.session_token=...`), if there.
    func cookieValue(in header: String?) -> String? {
        guard let header else { return nil }
        for crumb in header.split(separator: ";") {
            let parts = crumb.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == configuration.cookieName {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    // MARK: Helpers

    /// The server side of seed 004's field rules: the first problem, as an `{"error": ...}` text.
    static func problem(email: String, username: String, name: String, password: String) -> String? {
        let allowed = username.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "_", "-": true
            default: false
            }
        }
        if !(3...20).contains(username.count) || !allowed { return "Invalid username" }
        if password.count < 8 { return "Password too short" }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        if parts.count != 2 || parts[0].isEmpty || !parts[1].contains(".") || email.contains(where: \.isWhitespace) {
            return "Invalid email"
        }
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty || name.count > 50 { return "Invalid name" }
        return nil
    }

    /// 32 random bytes, base64url without padding (cookie-safe).
    private static func randomCookieValue() -> String { Base64URL.random(byteCount: 32) }

    private static func key(_ cookie: String) -> String {
        SHA256.hash(data: Data(cookie.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
