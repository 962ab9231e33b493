import ArgumentParser
import DietBackend
import Foundation
import Logging

/// `diet-backend`: the diet-app backend of seed 000, verifying Clerk-style session JWTs through a JWKS.
@main
struct DietBackendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diet-backend",
        abstract: "Diet-app backend: verifies Clerk-style RS256 session JWTs through the issuer's JWKS.",
        discussion: """
            Serves GET/POST/DELETE /users/me and GET/POST /food-logs on 127.0.0.1. Every request needs \
            `Authorization: Bearer <session JWT>` signed by a key in the JWKS at --jwks (RS256 only, exact iss, \
            azp among --authorized-party). Start `demo-auth-server` first: its issuer serves /v1/jwks and mints \
            tokens at /v1/client/sessions/{sid}/tokens.
            """
    )

    @Option(help: ArgumentHelp("The demo auth server whose issuer signs the tokens.", valueName: "url"))
    var authServer = "http://127.0.0.1:8080"

    @Option(help: "The exact `iss` of accepted tokens.")
    var issuer = "https://clerk.tokenkit-demo.test"

    @Option(help: "An accepted `azp` (repeatable); none given: any.")
    var authorizedParty: [String] = ["https://app.tokenkit-demo.test"]

    @Option(help: "The port to listen on (0: a free one).")
    var port = 8081

    @Flag(help: "Log each request's verification at debug level.")
    var verbose = false

    func validate() throws {
        guard URL(string: authServer)?.host != nil else { throw ValidationError("--auth-server must be a URL") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0...65535") }
    }

    func run() async throws {
        var logger = Logger(label: "diet-backend")
        logger.logLevel = verbose ? .debug : .info
        guard let jwksURL = URL(string: authServer)?.appendingPathComponent("v1/jwks") else { return }
        let backend = DietBackend(
            configuration: .init(
                issuer: issuer, jwksURL: jwksURL,
                authorizedParties: authorizedParty.isEmpty ? nil : Set(authorizedParty), port: port),
            logger: logger)
        try await backend.run { url in
            // Written unbuffered, so a script reading the URL sees it at once.
            let banner = "diet-backend listening on \(url.absoluteString), keys from \(jwksURL.absoluteString)\n"
            try? FileHandle.standardOutput.write(contentsOf: Data(banner.utf8))
        }
    }
}
