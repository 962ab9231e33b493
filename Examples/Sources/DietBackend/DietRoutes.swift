import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import TokenKitHummingbird
import TokenVerification

/// The request context: Hummingbird's basics plus the identity TokenKit's middleware verified (the seed's
/// `req.auth`: `userId`, `sessionId`).
struct DietRequestContext: BearerAuthRequestContext {
    var coreContext: CoreRequestContextStorage
    var identity: BearerIdentity?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        identity = nil
    }
}

/// Counts what the verification middleware behind it decided, for ``DietBackend/stats``: a ``BearerRejection``
/// thrown through it is a refusal (rethrown, so Hummingbird answers it), anything else got past the middleware.
struct OutcomeCounter: RouterMiddleware {
    typealias Context = DietRequestContext
    let backend: DietBackend

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            let response = try await next(request, context)
            backend.countAuthenticated()
            return response
        } catch let rejection as BearerRejection {
            backend.countRejected(rejection.rejection)
            throw rejection
        } catch {
            // Only the verification middleware refuses; an error from a route came after it let the request in.
            backend.countAuthenticated()
            throw error
        }
    }
}

/// The backend's endpoints on Hummingbird.
struct DietRoutes: Sendable {
    let backend: DietBackend

    func makeRouter() -> Router<DietRequestContext> {
        let router = Router(context: DietRequestContext.self)
        let guarded = router.group()
            .add(middleware: OutcomeCounter(backend: backend))
            .add(middleware: TokenVerificationMiddleware<DietRequestContext>(verifier: backend.verifier))
        guarded.get("/users/me") { _, context in
            Self.response(backend.currentUser(try context.requireIdentity()))
        }
        guarded.post("/users/me") { _, context in
            Self.response(await backend.syncUser(try context.requireIdentity()))
        }
        guarded.delete("/users/me") { _, context in
            Self.response(await backend.deleteAccount(try context.requireIdentity()))
        }
        guarded.get("/food-logs") { _, context in
            Self.response(await backend.foodLogs(try context.requireIdentity()))
        }
        guarded.post("/food-logs") { request, context in
            let identity = try context.requireIdentity()
            let body = try await request.body.collect(upTo: DietBackend.maximumFoodLogBytes)
            return Self.response(
                await backend.addFoodLog(identity, entry: String(decoding: body.readableBytesView, as: UTF8.self)))
        }
        return router
    }

    static func response(_ answer: DietAnswer) -> Response {
        Response(
            status: HTTPResponse.Status(code: answer.status), headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}

extension DietBackend {
    /// The backend on Hummingbird 2, in a `ServiceGroup`.
    func startHummingbird() async throws -> Running {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: DietRoutes(backend: self).makeRouter(),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: configuration.port)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger
        )
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [], logger: logger))
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0, let baseURL = URL(string: "http://127.0.0.1:\(port)") else {
            try await task.value
            throw DietBackendError(description: "the backend did not start")
        }
        return Running(baseURL: baseURL, finished: task, stop: { await group.triggerGracefulShutdown() })
    }
}

/// The users' documents and food logs (the seed's MongoDB collections), in memory.
actor UserStore {
    private var users: Set<String> = []
    private var logs: [String: [String]] = [:]

    /// Creates or updates the user's document; `true` when it was created.
    func upsertUser(_ userID: String) -> Bool { users.insert(userID).inserted }

    /// Deletes the user's document and every log; `false` when there was no document.
    func deleteUser(_ userID: String) -> Bool {
        logs[userID] = nil
        return users.remove(userID) != nil
    }

    func foodLogs(_ userID: String) -> [String] { logs[userID] ?? [] }

    func addFoodLog(_ userID: String, _ entry: String) -> Int {
        logs[userID, default: []].append(entry)
        return logs[userID]?.count ?? 0
    }
}
