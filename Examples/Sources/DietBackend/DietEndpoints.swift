import Foundation
import TokenVerification

/// An answer of the diet backend's endpoints, before a framework turns it into its own response type: the status and
/// the JSON body (sorted keys, so both frameworks answer byte for byte the same).
struct DietAnswer: Sendable {
    let status: Int
    let body: Data

    init(_ value: some Encodable, status: Int = 200) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        self.status = status
        body = (try? encoder.encode(value)) ?? Data("{}".utf8)
    }
}

/// The seed's routes, once for both frameworks: each gets the identity TokenKit's middleware verified (the seed's
/// `req.auth`) and answers from the in-memory store.
extension DietBackend {
    /// `GET /users/me`: `{"userId": sub, "sessionId": sid}`.
    func currentUser(_ identity: BearerIdentity) -> DietAnswer {
        DietAnswer(["userId": identity.userId, "sessionId": identity.sessionId ?? ""])
    }

    /// `POST /users/me`: creates the user document (201) or updates it (200).
    func syncUser(_ identity: BearerIdentity) async -> DietAnswer {
        let created = await store.upsertUser(identity.userId)
        return DietAnswer(
            ["clerkId": identity.userId, "created": created ? "true" : "false"], status: created ? 201 : 200)
    }

    /// `DELETE /users/me`: deletes the user's data, tells the identity provider, and answers the seed's
    /// `{"success": true, "message": ...}` (`success` a JSON boolean).
    func deleteAccount(_ identity: BearerIdentity) async -> DietAnswer {
        guard await store.deleteUser(identity.userId) else {
            return DietAnswer(["error": "User not found"], status: 404)
        }
        await onAccountDeleted(identity.userId)
        countDeletion()
        return DietAnswer(Deleted(success: true, message: "Account and all data deleted"))
    }

    /// `GET /food-logs`: how many entries the user has.
    func foodLogs(_ identity: BearerIdentity) async -> DietAnswer {
        let entries = await store.foodLogs(identity.userId)
        return DietAnswer(["userId": identity.userId, "entries": "\(entries.count)"])
    }

    /// `POST /food-logs`: adds the body as an entry.
    func addFoodLog(_ identity: BearerIdentity, entry: String) async -> DietAnswer {
        let count = await store.addFoodLog(identity.userId, entry)
        return DietAnswer(["userId": identity.userId, "entries": "\(count)"], status: 201)
    }

    /// The largest `POST /food-logs` body read.
    static let maximumFoodLogBytes = 16 * 1024
}

/// The seed's deletion answer.
struct Deleted: Encodable {
    let success: Bool
    let message: String
}
