public import ArgumentParser

/// The options every demo executable takes to sign in to the demo server's FitIQ-style endpoints.
public struct DemoAccountOptions: ParsableArguments, Sendable {
    /// The e-mail to sign in with.
    @Option(help: "The e-mail to log in with.")
    public var email = "demo@example.com"

    /// The password.
    @Option(help: "The password to log in with.")
    public var password = "password123"

    /// The `X-API-Key` value.
    @Option(help: "The X-API-Key the FitIQ-style endpoints require.")
    public var apiKey = "demo-api-key"

    /// Creates the defaults.
    public init() {}
}

/// The options of a demo app that talks to the demo auth server: which server, how long its tokens live, and how
/// long to wait for an answer.
public struct DemoServerOptions: ParsableArguments, Sendable {
    /// The external server, or `nil` to start one in this process.
    @Option(
        help: ArgumentHelp(
            "Use this demo auth server (e.g. http://127.0.0.1:8080) instead of starting one in-process.",
            valueName: "url"))
    public var server: String?

    /// The in-process server's access-token lifetime.
    @Option(
        help: ArgumentHelp(
            "Access-token lifetime of the in-process server (2...60; JWT times are whole seconds, so a 1-second "
                + "token may arrive already expired).",
            valueName: "seconds"))
    public var tokenLifetime = 3

    /// Seconds a request waits for an answer.
    @Option(help: ArgumentHelp("Seconds to wait for the server's answer to a request.", valueName: "seconds"))
    public var timeout = DemoTransport.defaultTimeout

    /// Creates the defaults.
    public init() {}

    /// Checks the ranges.
    ///
    /// - Throws: A `ValidationError` naming the option.
    public func validate() throws {
        guard (2...60).contains(tokenLifetime) else {
            throw ValidationError(
                "--token-lifetime must be 2...60 (JWT times are whole seconds: a 1-second token may arrive expired)")
        }
        guard (1...300).contains(timeout) else { throw ValidationError("--timeout must be 1...300") }
    }
}
