// Compiled only with the `DistributedTracing` package trait.
#if DistributedTracing
    import Foundation
    import InMemoryTracing
    import Testing
    import TokenKitLogCheck
    import TokenKitTesting
    import Tracing
    @testable import TokenVerification

    /// The process's tracer for these tests: swift-distributed-tracing is bootstrapped once per process, and spans of
    /// other suites may land in it too, so each test finds its own spans by its own JWKS URL and parent traces.
    enum TestTracer {
        static let shared: InMemoryTracer = {
            let tracer = InMemoryTracer()
            InstrumentationSystem.bootstrap(tracer)
            return tracer
        }()
    }

    @Suite(.logLeakCheck()) struct TracingTests {
        @Test func oneRefreshSpanLinksEveryVerificationThatWaitedOnIt() async throws {
            let tracer = TestTracer.shared
            let url = URL(string: "https://tracing-\(UUID().uuidString.lowercased()).example.com/jwks.json")!
            let fetcher = ScriptedFetcher([TestKeys.allJWKS])
            fetcher.hold()
            let clock = ManualClock()
            let source = RemoteJWKSSource(jwksURL: url, clock: clock, fetch: fetcher.fetch)
            let verifier = TestKeys.verifier(source: source, clock: clock)
            let token = TestKeys.token(.rs256)
            let waiters = 10

            let requests = Task {
                await withTaskGroup(of: (String, Bool).self) { group in
                    for index in 0..<waiters {
                        group.addTask {
                            await withSpan("request-\(index)", context: .topLevel) { span in
                                let traceID = span.context.inMemorySpanContext?.traceID ?? ""
                                return (traceID, (try? await verifier.verify(token)) != nil)
                            }
                        }
                    }
                    return await group.reduce(into: [(String, Bool)]()) { $0.append($1) }
                }
            }
            // Every request waits on the one held fetch before it is let go.
            let location = "\(RemoteJWKSSource.Location.jwks(url))"
            #expect(
                await eventually {
                    tracer.activeSpans.contains {
                        $0.operationName == "tokenkit.jwks.refresh"
                            && $0.attributes["tokenkit.jwks.location"]?.toSpanAttribute() == .string(location)
                            && $0.links.count == waiters
                    }
                })
            fetcher.release()
            let results = await requests.value
            #expect(results.filter { !$0.1 }.isEmpty)
            #expect(fetcher.count == 1)

            let finished = tracer.finishedSpans
            let refreshes = finished.filter {
                $0.operationName == "tokenkit.jwks.refresh"
                    && $0.attributes["tokenkit.jwks.location"]?.toSpanAttribute() == .string(location)
            }
            let refresh = try #require(refreshes.count == 1 ? refreshes.first : nil)
            let requestTraces = Set(results.map(\.0))
            let linkedTraces = Set(refresh.links.compactMap { $0.context.inMemorySpanContext?.traceID })
            #expect(refresh.links.count == waiters)
            #expect(linkedTraces == requestTraces)
            #expect(refresh.parentSpanID == nil)

            // One verification span per request, in the request's trace; the cache answered none of the first ones.
            let verifications = finished.filter {
                $0.operationName == "tokenkit.token.verify" && requestTraces.contains($0.traceID)
            }
            #expect(verifications.count == waiters)
            #expect(verifications.allSatisfy { $0.attributes["tokenkit.verifier.cache"]?.toSpanAttribute() == "miss" })

            // The same token again: a cache hit, in a trace of its own.
            let hitTrace = try await withSpan("request-again", context: .topLevel) { span in
                _ = try await verifier.verify(token)
                return span.context.inMemorySpanContext?.traceID ?? ""
            }
            let hit = tracer.finishedSpans.first {
                $0.operationName == "tokenkit.token.verify" && $0.traceID == hitTrace
            }
            #expect(hit?.attributes["tokenkit.verifier.cache"]?.toSpanAttribute() == "hit")

            // No attribute of any of these spans holds the token or a piece of it.
            for span in refreshes + verifications + [hit].compactMap({ $0 }) {
                span.attributes.forEach { name, value in
                    #expect(!"\(value)".contains(token.prefix(20)), "attribute \(name) holds token text")
                }
            }
        }

        /// The introspection span of the request traced as `name`: its attributes, with every value checked for the
        /// token's text.
        static func introspectionSpan(
            _ tracer: InMemoryTracer, _ verifier: IntrospectionVerifier, _ token: String, request name: String
        ) async throws -> FinishedInMemorySpan {
            let traceID = await withSpan(name, context: .topLevel) { span in
                _ = try? await verifier.verify(token)
                return span.context.inMemorySpanContext?.traceID ?? ""
            }
            let span = try #require(
                tracer.finishedSpans.first { $0.operationName == "tokenkit.token.introspect" && $0.traceID == traceID })
            span.attributes.forEach { name, value in
                #expect(!"\(value)".contains(token.prefix(12)), "attribute \(name) holds token text")
            }
            return span
        }

        @Test func oneIntrospectionSpanPerRequestWithTheCacheTheCallAndTheOutcome() async throws {
            let tracer = TestTracer.shared
            let (endpoint, clock) = (FakeIntrospectionEndpoint(), ManualClock())
            let (active, inactive) = (IntrospectionVerifierTests.token(), IntrospectionVerifierTests.token())
            endpoint.answer(active, IntrospectionVerifierTests.active(clock))
            let verifier = IntrospectionVerifierTests.verifier(endpoint, clock: clock)
            func attribute(_ span: FinishedInMemorySpan, _ name: String) -> SpanAttribute? {
                span.attributes[name]?.toSpanAttribute()
            }

            let first = try await Self.introspectionSpan(tracer, verifier, active, request: "first")
            #expect(attribute(first, "tokenkit.introspection.cache") == "miss")
            #expect(attribute(first, "tokenkit.introspection.call") == "sent")
            #expect(attribute(first, "tokenkit.introspection.outcome") == "active")
            #expect(attribute(first, "server.address") == "auth.example.com")
            #expect(first.attributes["error.type"] == nil)
            #expect(first.status == nil)

            let again = try await Self.introspectionSpan(tracer, verifier, active, request: "again")
            #expect(attribute(again, "tokenkit.introspection.cache") == "hit")
            #expect(again.attributes["tokenkit.introspection.call"] == nil)
            #expect(attribute(again, "tokenkit.introspection.outcome") == "active")
            #expect(endpoint.count == 1)

            let dead = try await Self.introspectionSpan(tracer, verifier, inactive, request: "dead")
            #expect(attribute(dead, "tokenkit.introspection.cache") == "miss")
            #expect(attribute(dead, "tokenkit.introspection.outcome") == "inactive")
            #expect(attribute(dead, "error.type") == "tokenInactive")
            #expect(dead.status?.code == .error)
            let deadAgain = try await Self.introspectionSpan(tracer, verifier, inactive, request: "dead-again")
            #expect(attribute(deadAgain, "tokenkit.introspection.cache") == "hit")
            #expect(attribute(deadAgain, "tokenkit.introspection.outcome") == "inactive")

            endpoint.behave(.unreachable)
            let down = try await Self.introspectionSpan(
                tracer, verifier, IntrospectionVerifierTests.token(), request: "down")
            #expect(attribute(down, "tokenkit.introspection.call") == "sent")
            #expect(attribute(down, "tokenkit.introspection.outcome") == "unavailable")
            #expect(attribute(down, "error.type") == "introspectionUnavailable")
        }

        @Test func callersThatShareOneIntrospectionCallEachGetASpanMarkedJoined() async throws {
            let tracer = TestTracer.shared
            let (endpoint, clock, token) = (
                FakeIntrospectionEndpoint(), ManualClock(), IntrospectionVerifierTests.token()
            )
            endpoint.answer(token, IntrospectionVerifierTests.active(clock))
            endpoint.hold()
            let verifier = IntrospectionVerifierTests.verifier(endpoint, clock: clock)
            let callers = 5
            let requests = Task {
                await withTaskGroup(of: String.self) { group in
                    for index in 0..<callers {
                        group.addTask {
                            await withSpan("shared-\(index)", context: .topLevel) { span in
                                _ = try? await verifier.verify(token)
                                return span.context.inMemorySpanContext?.traceID ?? ""
                            }
                        }
                    }
                    return await group.reduce(into: Set<String>()) { $0.insert($1) }
                }
            }
            #expect(await eventually { verifier.joinCount == callers - 1 })
            endpoint.release()
            let traces = await requests.value
            let spans = tracer.finishedSpans.filter {
                $0.operationName == "tokenkit.token.introspect" && traces.contains($0.traceID)
            }
            #expect(spans.count == callers)
            let calls = spans.compactMap { $0.attributes["tokenkit.introspection.call"]?.toSpanAttribute() }
            #expect(calls.filter { $0 == "sent" }.count == 1)
            #expect(calls.filter { $0 == "joined" }.count == callers - 1)
            #expect(spans.allSatisfy { $0.attributes["tokenkit.introspection.outcome"]?.toSpanAttribute() == "active" })
            #expect(endpoint.count == 1)
        }

        @Test func aRefusedTokensSpanCarriesTheReasonOnly() async throws {
            let tracer = TestTracer.shared
            let verifier = TestKeys.verifier()
            let token = TestKeys.token(.rs256, payload: TestKeys.claims(exp: "1799999000"))
            let traceID = await withSpan("request-expired", context: .topLevel) { span in
                _ = try? await verifier.verify(token)
                return span.context.inMemorySpanContext?.traceID ?? ""
            }
            let span = try #require(
                tracer.finishedSpans.first { $0.operationName == "tokenkit.token.verify" && $0.traceID == traceID })
            #expect(span.attributes["error.type"]?.toSpanAttribute() == "expired")
            #expect(span.status?.code == .error)
        }
    }
#endif
