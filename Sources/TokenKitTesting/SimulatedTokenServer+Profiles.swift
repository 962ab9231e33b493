extension SimulatedTokenServer.Configuration {
    /// A Clerk-like SDK's session (the fault scorecard's "60-s sessionless SDK token" column).
    ///
    /// The app holds no refresh token: its SDK keeps a long-lived client credential of its own, which the server
    /// neither rotates nor watches for reuse, and the app's `getToken()` returns a session token that lives 60 s,
    /// which the SDK caches and fetches again shortly before it expires. The credential is the refresh token of a
    /// session issued with ``SimulatedTokenServer/issueSession(userID:receivedAt:lifetime:)``; each token request
    /// counts as a refresh.
    ///
    /// It follows Clerk's documentation: session tokens are JWTs with a lifetime of 60 seconds
    /// (https://clerk.com/docs/guides/sessions/session-tokens), minted from the long-lived client token the SDK
    /// keeps (https://clerk.com/docs/guides/how-clerk-works/overview); the iOS SDK's `getToken()` answers from its
    /// cache unless the token expires within `expirationBuffer` (10 s by default) or `skipCache` is set
    /// (https://clerk.com/docs/reference/ios/get-token).
    ///
    /// - Parameter apiKey: The `X-API-Key` the JSON endpoint requires, if any.
    /// - Returns: The configuration.
    package static func sessionlessSDK(apiKey: String? = nil) -> Self {
        Self(apiKey: apiKey, accessTokenLifetime: 60, rotatesRefreshTokens: false, detectsReuse: false)
    }
}
