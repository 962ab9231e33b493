/// The OAuth client a token request speaks for: its ID, its secret (for confidential clients) and how
/// the secret is presented. Its description never shows the secret.
public struct OAuthClient: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// How a client authenticates at the token endpoint (RFC 6749 section 2.3.1).
    public struct Authentication: Sendable, Hashable {
        private enum Kind: Hashable { case basic, body, none }
        private let kind: Kind

        /// HTTP Basic with the form-encoded ID and secret (the method every server must support).
        public static let basic = Authentication(kind: .basic)
        /// `client_id` and `client_secret` in the request body.
        public static let body = Authentication(kind: .body)
        /// A public client: `client_id` in the body, no secret.
        public static let none = Authentication(kind: .none)

        var isBasic: Bool { kind == .basic }
        var isBody: Bool { kind == .body }
    }

    /// The client ID.
    package let id: String
    /// The client secret, for confidential clients.
    package let secret: String?
    /// How the client authenticates.
    package let authentication: Authentication

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - id: The client ID.
    ///   - secret: The client secret, for confidential clients; `nil` for public clients (mobile apps).
    ///   - authentication: How to present the secret; HTTP Basic by default, `none` without a secret.
    public init(id: String, secret: String? = nil, authentication: Authentication? = nil) {
        self.id = id
        self.secret = secret
        self.authentication = authentication ?? (secret == nil ? .none : .basic)
    }

    /// The client ID and authentication method; never the secret.
    public var description: String {
        "OAuthClient(\(id), secret: \(secret == nil ? "none" : "<redacted>"))"
    }

    /// A mirror without the secret.
    public var customMirror: Mirror {
        Mirror(self, children: ["id": id, "secret": secret == nil ? "nil" : "<redacted>"], displayStyle: .struct)
    }
}
