public import TokenRefresh

extension AuthServerError {
    /// The message to show for it.
    public var message: UserMessage {
        switch kind {
        case .usernameTaken: UserMessage(.usernameTaken)
        case .invalidCredentials: UserMessage(.invalidCredentials)
        case .sessionExpired: UserMessage(.backendSessionExpired)
        case .unrecognized: UserMessage(.unrecognizedServerError)
        }
    }
}
