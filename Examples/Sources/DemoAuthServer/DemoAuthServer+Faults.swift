extension DemoAuthServer {
    /// Faults the server injects into its refresh endpoints (both the FitIQ-style JSON endpoint and the OAuth
    /// `refresh_token` grant), for testing how a client copes.
    ///
    /// Each counter covers that many upcoming refresh requests and counts down as they arrive. When several are
    /// set, a request takes the first non-zero one in declaration order. Set them in the ``Configuration``, with
    /// ``DemoAuthServer/setFaults(_:)``, or with `POST /debug/faults` and a JSON body using the snake_case names,
    /// for example `{"unavailable_next_refreshes": 2, "retry_after_seconds": 3}` (missing members are zero).
    public struct Faults: Sendable, Hashable, Codable {
        /// Answer the next N refreshes with `500` and a JSON `server_error`, without rotating.
        public var failNextRefreshes: Int

        /// Answer the next N refreshes with `503`, `Retry-After: retryAfterSeconds` and a JSON
        /// `temporarily_unavailable`, without rotating.
        public var unavailableNextRefreshes: Int

        /// The `Retry-After` value, in seconds, sent with the injected `503`s.
        public var retryAfterSeconds: Int

        /// Answer the next N refreshes with `200` and an HTML page (a captive portal or a misrouted proxy),
        /// without rotating.
        public var htmlNextRefreshes: Int

        /// Answer the next N refreshes with `200`, `Content-Type: application/json` and a truncated JSON body,
        /// without rotating.
        public var malformedJSONNextRefreshes: Int

        /// Rotate on the next N refreshes, then close the connection without answering: the client never sees
        /// the new pair, and the refresh token it holds is now retired.
        public var dropResponseAfterRotationNextRefreshes: Int

        /// Rotate on the next N refreshes, then answer `500`: the client believes the refresh failed, but the
        /// refresh token it holds is now retired.
        public var failAfterRotationNextRefreshes: Int

        /// Answer every request outside `/debug/` with `200` and an HTML page, until turned off.
        public var htmlEverywhere: Bool

        /// Hold the next N refreshes for ``stallLimitSeconds`` without rotating, then answer `503`: a refresh
        /// in progress whose client may die meanwhile (a replica killed mid-refresh) without retiring anything.
        public var stallNextRefreshes: Int

        /// How long a stalled refresh is held before it is answered `503`.
        public var stallLimitSeconds: Int

        /// Creates a fault plan; everything is off by default.
        ///
        /// - Parameters:
        ///   - failNextRefreshes: Refreshes to answer with `500` before rotating.
        ///   - unavailableNextRefreshes: Refreshes to answer with `503` and `Retry-After`.
        ///   - retryAfterSeconds: The `Retry-After` value of those `503`s.
        ///   - htmlNextRefreshes: Refreshes to answer with an HTML page.
        ///   - malformedJSONNextRefreshes: Refreshes to answer with truncated JSON.
        ///   - dropResponseAfterRotationNextRefreshes: Refreshes to rotate and then leave unanswered.
        ///   - failAfterRotationNextRefreshes: Refreshes to rotate and then answer with `500`.
        ///   - htmlEverywhere: Whether every non-debug endpoint answers HTML.
        ///   - stallNextRefreshes: Refreshes to hold, unrotated, then answer with `503`.
        ///   - stallLimitSeconds: How long a stalled refresh is held; 30 s by default.
        public init(
            failNextRefreshes: Int = 0,
            unavailableNextRefreshes: Int = 0,
            retryAfterSeconds: Int = 1,
            htmlNextRefreshes: Int = 0,
            malformedJSONNextRefreshes: Int = 0,
            dropResponseAfterRotationNextRefreshes: Int = 0,
            failAfterRotationNextRefreshes: Int = 0,
            htmlEverywhere: Bool = false,
            stallNextRefreshes: Int = 0,
            stallLimitSeconds: Int = 30
        ) {
            self.failNextRefreshes = failNextRefreshes
            self.unavailableNextRefreshes = unavailableNextRefreshes
            self.retryAfterSeconds = retryAfterSeconds
            self.htmlNextRefreshes = htmlNextRefreshes
            self.malformedJSONNextRefreshes = malformedJSONNextRefreshes
            self.dropResponseAfterRotationNextRefreshes = dropResponseAfterRotationNextRefreshes
            self.failAfterRotationNextRefreshes = failAfterRotationNextRefreshes
            self.htmlEverywhere = htmlEverywhere
            self.stallNextRefreshes = stallNextRefreshes
            self.stallLimitSeconds = stallLimitSeconds
        }

        enum CodingKeys: String, CodingKey {
            case failNextRefreshes = "fail_next_refreshes"
            case unavailableNextRefreshes = "unavailable_next_refreshes"
            case retryAfterSeconds = "retry_after_seconds"
            case htmlNextRefreshes = "html_next_refreshes"
            case malformedJSONNextRefreshes = "malformed_json_next_refreshes"
            case dropResponseAfterRotationNextRefreshes = "drop_response_after_rotation_next_refreshes"
            case failAfterRotationNextRefreshes = "fail_after_rotation_next_refreshes"
            case htmlEverywhere = "html_everywhere"
            case stallNextRefreshes = "stall_next_refreshes"
            case stallLimitSeconds = "stall_limit_seconds"
        }

        /// Decodes a fault plan; missing members take their defaults.
        ///
        /// - Parameter decoder: The decoder to read from.
        /// - Throws: A `DecodingError` when a member has the wrong type.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            func count(_ key: CodingKeys) throws -> Int {
                max(0, try container.decodeIfPresent(Int.self, forKey: key) ?? 0)
            }
            self.init(
                failNextRefreshes: try count(.failNextRefreshes),
                unavailableNextRefreshes: try count(.unavailableNextRefreshes),
                retryAfterSeconds: max(0, try container.decodeIfPresent(Int.self, forKey: .retryAfterSeconds) ?? 1),
                htmlNextRefreshes: try count(.htmlNextRefreshes),
                malformedJSONNextRefreshes: try count(.malformedJSONNextRefreshes),
                dropResponseAfterRotationNextRefreshes: try count(.dropResponseAfterRotationNextRefreshes),
                failAfterRotationNextRefreshes: try count(.failAfterRotationNextRefreshes),
                htmlEverywhere: try container.decodeIfPresent(Bool.self, forKey: .htmlEverywhere) ?? false,
                stallNextRefreshes: try count(.stallNextRefreshes),
                stallLimitSeconds: max(0, try container.decodeIfPresent(Int.self, forKey: .stallLimitSeconds) ?? 30)
            )
        }
    }
}

/// What the server does with one refresh request, decided by the fault plan.
enum RefreshFault: Sendable, Equatable {
    case none
    case serverError
    case unavailable(retryAfterSeconds: Int)
    case html
    case malformedJSON
    case dropAfterRotation
    case serverErrorAfterRotation
    case stall(limitSeconds: Int)
}

extension DemoAuthServer.Faults {
    /// Takes the fault that answers the next refresh before any rotation, counting its counter down.
    mutating func takePreRotationFault() -> RefreshFault {
        if failNextRefreshes > 0 {
            failNextRefreshes -= 1
            return .serverError
        }
        if unavailableNextRefreshes > 0 {
            unavailableNextRefreshes -= 1
            return .unavailable(retryAfterSeconds: retryAfterSeconds)
        }
        if htmlNextRefreshes > 0 {
            htmlNextRefreshes -= 1
            return .html
        }
        if malformedJSONNextRefreshes > 0 {
            malformedJSONNextRefreshes -= 1
            return .malformedJSON
        }
        if stallNextRefreshes > 0 {
            stallNextRefreshes -= 1
            return .stall(limitSeconds: stallLimitSeconds)
        }
        return .none
    }

    /// Takes the fault that strikes after a refresh issued tokens, counting its counter down.
    mutating func takePostRotationFault() -> RefreshFault {
        if dropResponseAfterRotationNextRefreshes > 0 {
            dropResponseAfterRotationNextRefreshes -= 1
            return .dropAfterRotation
        }
        if failAfterRotationNextRefreshes > 0 {
            failAfterRotationNextRefreshes -= 1
            return .serverErrorAfterRotation
        }
        return .none
    }
}
