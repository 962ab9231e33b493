import AuthToken
import Foundation
import NetworkRetry
import TokenRefresh

/// A message for the person using the app, in English or Japanese, from the package's resources
/// (`en.json` and `ja.json`, with the Japanese strings a BetterAuth app shows).
///
/// ```swift
/// import Foundation
/// import TokenKitScreens
///
/// func alertText(for error: any Error) -> String {
///     UserMessage(for: error).text(in: .japanese)
/// }
/// ```
///
/// Messages never contain what a server or a user sent: unknown server text maps to
/// ``Key/unrecognizedServerError``, so nothing raw (and no secret) reaches the screen or a log.
public struct UserMessage: Sendable, Hashable {
    /// The languages the resources carry.
    public enum Language: String, Sendable, CaseIterable {
        /// English (`en`), also the fallback.
        case english = "en"
        /// Japanese (`ja`).
        case japanese = "ja"

        /// The first of the user's preferred languages that the resources carry; English otherwise. The same
        /// choice as every TokenKit error's `localizedDescription`: the system's languages on Apple platforms, and
        /// elsewhere the locale variables (`LANGUAGE`, `LC_ALL`, `LC_MESSAGES`, `LANG`).
        public static var preferred: Language {
            Language(rawValue: MessageLanguage.preferred.rawValue) ?? .english
        }
    }

    /// Which message.
    public enum Key: String, Sendable, CaseIterable {
        /// The title shown when an old session was cleared and the user must sign in again.
        case reauthenticationRequiredTitle
        /// The body shown when an old session was cleared and the user must sign in again.
        case reauthenticationRequired
        /// The session ended (a 401 that a check confirmed or a refresh did not cure, an expiry); shown with the
        /// sign-in screen.
        case sessionExpired
        /// No internet connection.
        case offline
        /// The connection timed out.
        case timedOut
        /// Another network failure.
        case networkError
        /// Sign-up refused: the username is taken.
        case usernameTaken
        /// Sign-in refused: wrong username or password.
        case invalidCredentials
        /// The server said the session expired.
        case backendSessionExpired
        /// The server answered with an error this app does not know.
        case unrecognizedServerError
        /// A field is shorter than its minimum (the message carries the minimum).
        case tooShort
        /// A field is longer than its maximum (the message carries the maximum).
        case tooLong
        /// A username with characters outside letters, digits, `_` and `-`.
        case invalidCharacters
        /// An e-mail address that is not shaped like one.
        case invalidFormat
    }

    /// Which message this is.
    public let key: Key
    /// The number the message carries (a minimum or maximum length), if any.
    public let count: Int?

    /// Creates a message.
    ///
    /// - Parameters:
    ///   - key: Which message.
    ///   - count: The number it carries, for ``Key/tooShort`` and ``Key/tooLong``.
    public init(_ key: Key, count: Int? = nil) {
        self.key = key
        self.count = count
    }

    /// The message's text.
    ///
    /// - Parameter language: The language; the user's preferred one by default.
    /// - Returns: The text. If the resources cannot be found, the English text, or at worst the key's name.
    public func text(in language: Language = .preferred) -> String {
        let template =
            MessageTables.shared.tables[language]?[key.rawValue] ?? MessageTables.shared.tables[.english]?[key.rawValue]
            ?? key.rawValue
        guard let count else { return template }
        return template.replacingOccurrences(of: "%d", with: String(count))
    }
}

extension UserMessage {
    /// The message for `error`, as a cookie-session app maps them: no connection, a timeout, another network failure,
    /// an ended session (also a 401 that a refresh did not cure), refused credentials, or a server error (known texts
    /// only).
    ///
    /// - Parameter error: Any error TokenKit throws (or a `URLError`).
    public init(for error: any Error) {
        switch error {
        case let error as AuthServerError:
            self = error.message
        case let error as TokenRefreshError:
            self.init(forRefresh: error)
        case let error as NetworkRetryError:
            self.init(forNetwork: error)
        case let error as URLError:
            self.init(forURLError: error.code)
        default:
            self.init(.networkError)
        }
    }

    private init(forRefresh error: TokenRefreshError) {
        if let answer = error.underlying as? AuthServerError {
            self = answer.message
            return
        }
        switch error {
        case .signInRejected: self.init(.invalidCredentials)
        case .refreshTokenRejected, .sessionExpired, .sessionInvalidated, .signedOut: self.init(.sessionExpired)
        case .timeout: self.init(.timedOut)
        default:
            if let underlying = error.underlying {
                self.init(for: underlying)
            } else if error.isConnectivityFailure {
                self.init(.offline)
            } else {
                self.init(.networkError)
            }
        }
    }

    private init(forNetwork error: NetworkRetryError) {
        if error == .unauthorizedAfterRefresh {
            // The server refused a fresh token too: the session is over, as when a cookie session's check says so.
            self.init(.sessionExpired)
        } else if error == .timedOut {
            self.init(.timedOut)
        } else if let underlying = error.underlying {
            self.init(for: underlying)
        } else if error == .cannotConnect {
            self.init(.offline)
        } else {
            self.init(.networkError)
        }
    }

    private init(forURLError code: URLError.Code) {
        switch code {
        case .notConnectedToInternet, .networkConnectionLost, .dataNotAllowed: self.init(.offline)
        case .timedOut: self.init(.timedOut)
        default: self.init(.networkError)
        }
    }

    /// The message for a sign-up field's problem (``CredentialRules``).
    ///
    /// - Parameter problem: The problem.
    public init(for problem: CredentialRules.Problem) {
        switch problem {
        case .tooShort(let minimum): self.init(.tooShort, count: minimum)
        case .tooLong(let maximum): self.init(.tooLong, count: maximum)
        case .invalidCharacters: self.init(.invalidCharacters)
        case .invalidFormat: self.init(.invalidFormat)
        }
    }
}

/// The message tables, read once from the package's resources.
final class MessageTables: Sendable {
    static let shared = MessageTables()

    let tables: [UserMessage.Language: [String: String]]

    private init() {
        var tables: [UserMessage.Language: [String: String]] = [:]
        if let directory = Self.resourceDirectory() {
            for language in UserMessage.Language.allCases {
                let url = directory.appendingPathComponent("\(language.rawValue).json")
                if let data = try? Data(contentsOf: url),
                    let table = try? JSONDecoder().decode([String: String].self, from: data)
                {
                    tables[language] = table
                }
            }
        }
        self.tables = tables
    }

    /// The directory holding `en.json` and `ja.json`: SwiftPM's resource bundle for this module, searched for
    /// without `Bundle.module`, whose accessor stops the process when the bundle is missing (a relocated Linux
    /// binary, say). Without it, messages fall back to their keys' names.
    private static func resourceDirectory() -> URL? {
        MessageCatalog.resourceDirectory(bundle: "TokenKit_TokenKitScreens", containing: "en.json")
    }
}
