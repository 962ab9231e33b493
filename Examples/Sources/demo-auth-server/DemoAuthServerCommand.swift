import ArgumentParser
import DemoAuthServer
import Foundation
import Logging

/// `demo-auth-server`: runs the TokenKit demo authorization server on 127.0.0.1 until Ctrl-C.
@main
struct DemoAuthServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo-auth-server",
        abstract: "A small OAuth 2.0 and FitIQ-style auth server on 127.0.0.1, for trying TokenKit.",
        discussion: """
            Log in as demo@example.com / password123. Endpoints: POST /api/v1/auth/login, /api/v1/auth/refresh, \
            /api/v1/auth/logout (JSON, X-API-Key), POST /oauth/token, /oauth/revoke (form-encoded, client_id \
            demo-app, or demo-backend with secret demo-secret), GET /.well-known/jwks.json, GET /api/v1/progress, \
            /api/v1/sleep, /api/v1/nutrition, POST /api/v1/photo-recognition (Bearer), GET /debug/stats, \
            GET|POST /debug/faults, POST /debug/revoke-sessions. The Clerk-like issuer: POST /v1/client/sign_ins, \
            /v1/client/sessions/{sid}/tokens, GET /v1/jwks, /.well-known/openid-configuration, \
            POST /debug/issuer/rotate-key, GET /debug/issuer/stats. See Examples/README.md.
            """
    )

    @Option(help: "The port to listen on (127.0.0.1 only); 0 picks a free port.")
    var port = 8080

    @Option(help: ArgumentHelp("Access-token lifetime in seconds.", valueName: "seconds"))
    var accessTokenLifetime = 900

    @Option(help: ArgumentHelp("Refresh-token lifetime in seconds.", valueName: "seconds"))
    var refreshTokenLifetime = 30 * 24 * 3600

    @Option(
        help: ArgumentHelp(
            "Seconds during which a just-rotated refresh token may be presented again (same new pair); 0 is off.",
            valueName: "seconds"
        )
    )
    var graceWindow = 0

    @Flag(inversion: .prefixedNo, help: "Revoke the whole session when a rotated refresh token is reused.")
    var reuseDetection = true

    @Flag(inversion: .prefixedNo, help: "Issue a new refresh token on every refresh (rotation).")
    var rotation = true

    @Option(help: "The X-API-Key the FitIQ-style endpoints require.")
    var apiKey = "demo-api-key"

    @Option(help: "The log level (trace, debug, info, notice, warning, error, critical).")
    var logLevel = "info"

    @Option(help: ArgumentHelp("Cookie-session lifetime in seconds (BetterAuth routes).", valueName: "seconds"))
    var sessionLifetime = 7 * 24 * 3600

    @Option(help: ArgumentHelp("Seconds after which a checked cookie session is renewed.", valueName: "seconds"))
    var sessionUpdateAge = 24 * 3600

    @Option(help: ArgumentHelp("The Clerk-like issuer's signing algorithm (RS256 or ES256).", valueName: "alg"))
    var sessionAlgorithm = "RS256"

    @Flag(
        inversion: .prefixedNo,
        help: "Publish the Clerk-like issuer's next key before it signs (off: it appears at the rotation, as Clerk's)."
    )
    var publishNextKey = true

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535.") }
        guard accessTokenLifetime >= 1 else { throw ValidationError("--access-token-lifetime must be at least 1.") }
        guard refreshTokenLifetime >= 1 else { throw ValidationError("--refresh-token-lifetime must be at least 1.") }
        guard graceWindow >= 0 else { throw ValidationError("--grace-window must not be negative.") }
        guard !apiKey.isEmpty else { throw ValidationError("--api-key must not be empty.") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("Unknown --log-level.") }
        guard SessionIssuer.Algorithm(name: sessionAlgorithm) != nil else {
            throw ValidationError("--session-algorithm must be RS256 or ES256.")
        }
        guard sessionLifetime >= 1, sessionUpdateAge >= 1 else {
            throw ValidationError("--session-lifetime and --session-update-age must be at least 1.")
        }
    }

    func run() async throws {
        var logger = Logger(label: "demo-auth-server")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        var configuration = DemoAuthServer.Configuration(
            accessTokenLifetime: .seconds(accessTokenLifetime),
            refreshTokenLifetime: .seconds(refreshTokenLifetime),
            rotateRefreshTokens: rotation,
            reuseDetection: reuseDetection,
            graceWindow: .seconds(graceWindow),
            apiKey: apiKey
        )
        configuration.betterAuth = .init(
            sessionLifetime: .seconds(sessionLifetime), updateAge: .seconds(sessionUpdateAge))
        let issuer = SessionIssuer.Configuration(
            algorithm: SessionIssuer.Algorithm(name: sessionAlgorithm) ?? .rs256, publishesNextKey: publishNextKey)
        let server = DemoAuthServer(configuration: configuration, logger: logger, issuer: issuer)
        do {
            try await server.run(onPort: port) { url in
                // Written unbuffered, so a script reading the URL sees it at once.
                let banner = """
                    demo-auth-server listening on \(url.absoluteString)
                      log in as \(DemoAuthServer.User.demo.email) (its demo password is in --help)
                      access tokens live \(accessTokenLifetime) s, grace window \(graceWindow) s, \
                    reuse detection \(reuseDetection ? "on" : "off"), rotation \(rotation ? "on" : "off")
                      Clerk-like issuer: \(issuer.algorithm), next key published \(publishNextKey ? "yes" : "no"), \
                    discovery: curl \(url.absoluteString)/.well-known/openid-configuration
                      stats: curl \(url.absoluteString)/debug/stats   (Ctrl-C to stop)

                    """
                FileHandle.standardOutput.write(Data(banner.utf8))
            }
        } catch let error as DemoAuthServerError {
            let cause = error.underlying.map { ": \($0)" } ?? ""
            let message = """
                error: could not listen on 127.0.0.1:\(port)\(cause)
                Is another server using that port? Pick another with --port, or --port 0 for a free one.

                """
            FileHandle.standardError.write(Data(message.utf8))
            throw ExitCode.failure
        }
    }
}
