package import AuthToken

/// The signed-in user as far as the session knows it: the ID at least, and name, e-mail, image and session ID
/// when the token says so (OIDC's `name`, `given_name`, `family_name`, `email`, `picture`; Clerk's `sid`).
///
/// Read from the access token's claims without verifying them: for display, never for authorization.
public struct AuthUser: Sendable, Hashable, CustomStringConvertible {
    /// The user ID (`sub`, or the ID the app gave at sign-in).
    public var id: String
    /// The first name, if known.
    public var firstName: String?
    /// The last name, if known.
    public var lastName: String?
    /// The full name, if known.
    public var name: String?
    /// The e-mail address, if known.
    public var email: String?
    /// The profile image URL, if known.
    public var imageURL: String?
    /// The session ID (`sid`), if the token has one.
    public var sessionID: String?

    /// Creates a user.
    ///
    /// - Parameters:
    ///   - id: The user ID.
    ///   - firstName: The first name.
    ///   - lastName: The last name.
    ///   - name: The full name.
    ///   - email: The e-mail address.
    ///   - imageURL: The profile image URL.
    ///   - sessionID: The session ID.
    public init(
        id: String, firstName: String? = nil, lastName: String? = nil, name: String? = nil, email: String? = nil,
        imageURL: String? = nil, sessionID: String? = nil
    ) {
        self.id = id
        self.firstName = firstName
        self.lastName = lastName
        self.name = name
        self.email = email
        self.imageURL = imageURL
        self.sessionID = sessionID
    }

    /// The user a token's claims describe, with `userID` standing in for a missing `sub`.
    ///
    /// - Parameters:
    ///   - token: The access (or ID) token.
    ///   - userID: The user ID the app knows, if any.
    /// - Returns: The user, or `nil` when neither the claims nor `userID` give an ID.
    package init?(token: AuthToken, userID: String? = nil) {
        self.init(claims: token.claims, userID: userID)
    }

    /// The user an OpenID Connect ID token describes (`sub`, `given_name`, `family_name`, `name`, `email`,
    /// `picture`), for ``TokenRefreshClient/setProfile(_:)`` when the access token carries no profile.
    ///
    /// The claims are read without verifying the signature: for display, never for authorization.
    ///
    /// - Parameter idToken: The ID token (a compact JWT).
    /// - Returns: The user, or `nil` when the token is not a JWT or has no `sub`.
    public init?(idToken: String) {
        guard let claims = try? JWT(parsing: idToken).claims else { return nil }
        self.init(claims: claims, userID: nil)
    }

    private init?(claims: JWTClaims?, userID: String?) {
        guard let id = userID ?? claims?.subject else { return nil }
        self.init(
            id: id, firstName: claims?.string("given_name") ?? claims?.string("first_name"),
            lastName: claims?.string("family_name") ?? claims?.string("last_name"), name: claims?.string("name"),
            email: claims?.string("email"), imageURL: claims?.string("picture") ?? claims?.string("image_url"),
            sessionID: claims?.string("sid"))
    }

    /// The ID and session ID; names and e-mail are left out of logs.
    public var description: String { "AuthUser(\(id)\(sessionID.map { ", session \($0)" } ?? ""))" }
}
