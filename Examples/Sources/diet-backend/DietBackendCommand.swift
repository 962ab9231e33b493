import ArgumentParser
import DietBackend
import Foundation
import Logging
import TokenVerification

/// `diet-backend`: the diet-app backend of seed 000, verifying Clerk-style session JWTs with TokenKit's Hummingbird
/// middleware (or, with `--framework vapor`, its Vapor middleware), its keys found through the issuer's OpenID Connect
/// discovery.
@main
struct DietBackendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diet-backend",
        abstract: "Diet-app backend: verifies Clerk-style session JWTs through the issuer's discovery and JWKS.",
        discussion: """
            Serves GET/POST/DELETE /users/me and GET/POST /food-logs on 127.0.0.1, on Hummingbird or (with \
            --framework vapor) on Vapor, with the same answers. Every request needs \
            `Authorization: Bearer <session JWT>` signed by a key of the issuer (RS256 only unless --algorithm, \
            exact iss, azp among --authorized-party). The keys come from the jwks_uri of \
            <issuer>/.well-known/openid-configuration, or from --jwks-url. Start `demo-auth-server` first: its \
            Clerk-like issuer is its own base URL, serves discovery and /v1/jwks, and mints tokens at \
            /v1/client/sessions/{sid}/tokens.
            """
    )

    @Option(help: ArgumentHelp("The demo auth server whose issuer signs the tokens.", valueName: "url"))
    var authServer = "http://127.0.0.1:8080"

    @Option(help: ArgumentHelp("The exact `iss` of accepted tokens, and where discovery starts.", valueName: "url"))
    var issuer: String?

    @Option(help: ArgumentHelp("The JWKS URL, skipping discovery.", valueName: "url"))
    var jwksURL: String?

    @Option(help: "An accepted `azp` (repeatable); none given: any.")
    var authorizedParty: [String] = ["https://app.tokenkit-demo.test"]

    @Option(help: ArgumentHelp("An accepted signing algorithm (repeatable).", valueName: "alg"))
    var algorithm: [String] = ["RS256"]

    @Option(
        help: ArgumentHelp(
            "Least seconds between two JWKS refetches caused by unknown key IDs.", valueName: "seconds"))
    var unknownKidCooldown = 30

    @Option(help: "The port to listen on (0: a free one).")
    var port = 8081

    @Option(
        help: ArgumentHelp(
            "The server framework: hummingbird or vapor (the same routes and answers).", valueName: "name"))
    var framework = DietBackend.Configuration.Framework.hummingbird.rawValue

    @Flag(help: "Log each request's verification at debug level.")
    var verbose = false

    func validate() throws {
        guard URL(string: authServer)?.host != nil else { throw ValidationError("--auth-server must be a URL") }
        if let issuer, URL(string: issuer)?.host == nil { throw ValidationError("--issuer must be a URL") }
        if let jwksURL, URL(string: jwksURL)?.host == nil { throw ValidationError("--jwks-url must be a URL") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard unknownKidCooldown >= 0 else { throw ValidationError("--unknown-kid-cooldown must not be negative") }
        guard DietBackend.Configuration.Framework(rawValue: framework) != nil else {
            throw ValidationError("--framework must be hummingbird or vapor")
        }
        for name in algorithm where Self.algorithm(named: name) == nil {
            throw ValidationError("unknown --algorithm \(name)")
        }
    }

    static func algorithm(named name: String) -> JWSAlgorithm? {
        JWSAlgorithm.asymmetric.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    func run() async throws {
        var logger = Logger(label: "diet-backend")
        logger.logLevel = verbose ? .debug : .info
        var issuer = issuer ?? authServer
        while issuer.hasSuffix("/") { issuer.removeLast() }
        var keyCache = RemoteJWKSSource.Configuration()
        keyCache.unknownKeyCooldown = .seconds(unknownKidCooldown)
        let backend = DietBackend(
            configuration: .init(
                issuer: issuer, jwksURL: jwksURL.flatMap(URL.init(string:)),
                authorizedParties: authorizedParty.isEmpty ? nil : Set(authorizedParty),
                algorithms: Set(algorithm.compactMap(Self.algorithm(named:))), keyCache: keyCache, port: port,
                framework: DietBackend.Configuration.Framework(rawValue: framework) ?? .hummingbird),
            logger: logger)
        let keys = jwksURL ?? "the jwks_uri of \(issuer)/.well-known/openid-configuration"
        try await backend.run { url in
            // Written unbuffered, so a script reading the URL sees it at once.
            let banner = "diet-backend (\(framework)) listening on \(url.absoluteString), keys from \(keys)\n"
            try? FileHandle.standardOutput.write(contentsOf: Data(banner.utf8))
        }
    }
}
