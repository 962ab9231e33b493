import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
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

/// The backend's endpoints.
struct DietRoutes: Sendable {
    let backend: DietBackend

    func makeRouter() -> Router<DietRequestContext> {
        let router = Router(context: DietRequestContext.self)
        let guarded = router.group()
            .add(middleware: OutcomeCounter(backend: backend))
            .add(middleware: TokenVerificationMiddleware<DietRequestContext>(verifier: backend.verifier))
        guarded.get("/users/me") { _, context in
            let identity = try context.requireIdentity()
            return Self.json(["userId": identity.userId, "sessionId": identity.sessionId ?? ""])
        }
        guarded.post("/users/me") { _, context in
            let auth = try Self.auth(context)
            let created = await backend.store.upsertUser(auth.userID)
            return Self.json(
                ["clerkId": auth.userID, "created": created ? "true" : "false"], status: created ? .created : .ok)
        }
        guarded.delete("/users/me") { _, context in
            let auth = try Self.auth(context)
            guard await backend.store.deleteUser(auth.userID) else {
                return Self.json(["error": "User not found"], status: .notFound)
            }
            await backend.onAccountDeleted(auth.userID)
            backend.countDeletion()
            return Self.json(Deleted(success: true, message: "Account and all data deleted"))
        }
        guarded.get("/food-logs") { _, context in
            let auth = try Self.auth(context)
            let entries = await backend.store.foodLogs(auth.userID)
            return Self.json(["userId": auth.userID, "entries": "\(entries.count)"])
        }
        guarded.post("/food-logs") { request, context in
            let auth = try Self.auth(context)
            let body = try await request.body.collect(upTo: 16 * 1024)
            let count = await backend.store.addFoodLog(
                auth.userID, String(decoding: body.readableBytesView, as: UTF8.self))
            return Self.json(["userId": auth.userID, "entries": "\(count)"], status: .created)
        }
        return router
    }

    static func auth(_ context: DietRequestContext) throws -> (userID: String, sessionID: String?) {
        let identity = try context.requireIdentity()
        return (identity.userId, identity.sessionId)
    }

    /// The seed's deletion answer, `{"success": true, "message": ...}`: `success` is a JSON boolean.
    struct Deleted: Encodable {
        let success: Bool
        let message: String
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
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
