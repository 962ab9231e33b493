import AuthToken
public import Foundation

/// An auth server's `{"error": "..."}` answer, as a typed error (what a BetterAuth app's `BackendError` carries).
///
/// Only the texts listed in ``Kind`` are recognised; any other text becomes ``Kind/unrecognized`` and is dropped,
/// so nothing a server sent is shown raw or logged.
///
/// ```swift
/// import Foundation
/// import TokenRefresh
///
/// let body = Data(#"{"error": "Username already exists"}"#.utf8)
/// if let error = AuthServerError(status: 422, body: body) {
///     print(error.kind, error.localizedDescription)
/// }
/// ```
public struct AuthServerError: Error, Sendable, Hashable, LocalizedError {
    /// What the server said.
    public enum Kind: Sendable, Hashable {
        /// "Username already exists".
        case usernameTaken
        /// "Invalid credentials".
        case invalidCredentials
        /// "Session expired".
        case sessionExpired
        /// A text this library does not know (not kept).
        case unrecognized
    }

    /// What the server said.
    public let kind: Kind
    /// The HTTP status, if known.
    public let status: Int?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - kind: What the server said.
    ///   - status: The HTTP status, if known.
    package init(kind: Kind, status: Int? = nil) {
        self.kind = kind
        self.status = status
    }

    /// Reads a server's `{"error": "..."}` answer.
    ///
    /// - Parameters:
    ///   - status: The HTTP status, if known.
    ///   - body: The answer's body.
    /// - Returns: `nil` when the body is not a JSON object with a string `error`.
    public init?(status: Int?, body: Data) {
        guard body.count <= 64 * 1024,
            let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let text = object["error"] as? String
        else { return nil }
        self.init(kind: Self.kind(of: text), status: status)
    }

    private static func kind(of text: String) -> Kind {
        switch text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() {
        case "username already exists": .usernameTaken
        case "invalid credentials": .invalidCredentials
        case "session expired": .sessionExpired
        default: .unrecognized
        }
    }

    /// The message in the user's preferred language (English or Japanese).
    public var errorDescription: String? { localizedText }

    /// The message for `kind` in the user's language; the same text as `UserMessage` in TokenKitScreens shows.
    package var localizedText: String {
        switch kind {
        case .usernameTaken:
            TokenRefreshError.messages.text("usernameTaken", english: "This username is already taken.")
        case .invalidCredentials:
            TokenRefreshError.messages.text("invalidCredentials", english: "The username or password is incorrect.")
        case .sessionExpired:
            TokenRefreshError.messages.text("backendSessionExpired", english: "Your session has expired.")
        case .unrecognized:
            TokenRefreshError.messages.text(
                "unrecognizedServerError", english: "Something went wrong on the server. Please try again later.")
        }
    }
}
