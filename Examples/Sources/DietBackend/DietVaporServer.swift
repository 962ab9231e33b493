import Foundation
import Logging
import TokenKitVapor
import TokenVerification
import Vapor

/// Counts what TokenKit's Vapor middleware behind it decided, for ``DietBackend/stats``: a request it refused has
/// its refusal on record (`TokenVerificationMiddleware.rejection(of:)`), any other request got past it.
struct VaporOutcomeCounter: AsyncMiddleware {
    let backend: DietBackend

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        defer {
            if let rejection = TokenVerificationMiddleware.rejection(of: request) {
                backend.countRejected(rejection)
            } else {
                backend.countAuthenticated()
            }
        }
        return try await next.respond(to: request)
    }
}

extension DietBackend {
    /// The same backend on Vapor 4: the same routes and answers, behind TokenKit's Vapor middleware
    /// (`TokenVerificationMiddleware` from `TokenKitVapor`), with the identity in `req.auth`.
    func startVapor() async throws -> Running {
        // Vapor logs each request head, `Authorization` included, at trace level: its logger stays at debug or above.
        var vaporLogger = logger
        vaporLogger.logLevel = max(logger.logLevel, .debug)
        // Arguments of its own, so Vapor never reads the process's command line (the backend's own options).
        let app = try await Application.make(
            Environment(name: "production", arguments: ["diet-backend"]), logger: vaporLogger)
        let guarded = app.grouped(VaporOutcomeCounter(backend: self))
            .grouped(TokenVerificationMiddleware(verifier: verifier))
        guarded.get("users", "me") { request in
            Self.response(self.currentUser(try request.auth.require(BearerIdentity.self)))
        }
        guarded.post("users", "me") { request in
            Self.response(await self.syncUser(try request.auth.require(BearerIdentity.self)))
        }
        guarded.delete("users", "me") { request in
            Self.response(await self.deleteAccount(try request.auth.require(BearerIdentity.self)))
        }
        guarded.get("food-logs") { request in
            Self.response(await self.foodLogs(try request.auth.require(BearerIdentity.self)))
        }
        guarded.on(.POST, "food-logs", body: .collect(maxSize: ByteCount(value: Self.maximumFoodLogBytes))) {
            request in
            let identity = try request.auth.require(BearerIdentity.self)
            return Self.response(await self.addFoodLog(identity, entry: request.body.string ?? ""))
        }
        do {
            try await app.asyncBoot()
            try await app.server.start(address: .hostname("127.0.0.1", port: configuration.port))
        } catch {
            try? await app.asyncShutdown()
            throw error
        }
        guard let port = app.http.server.shared.localAddress?.port, port > 0,
            let baseURL = URL(string: "http://127.0.0.1:\(port)")
        else {
            await app.server.shutdown()
            try? await app.asyncShutdown()
            throw DietBackendError(description: "the backend did not start")
        }
        let server = app.server
        let finished = Task { try await server.onShutdown.get() }
        return Running(
            baseURL: baseURL, finished: finished,
            stop: {
                await app.server.shutdown()
                try? await app.asyncShutdown()
            })
    }

    static func response(_ answer: DietAnswer) -> Response {
        Response(
            status: HTTPResponseStatus(statusCode: answer.status), headers: ["Content-Type": "application/json"],
            body: .init(data: answer.body))
    }
}
