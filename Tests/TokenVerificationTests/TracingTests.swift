// Compiled only with the `DistributedTracing` package trait.
#if DistributedTracing
    import Foundation
    import InMemoryTracing
    import Testing
    import TokenKitLogCheck
    import TokenKitTesting
    import Tracing
    import TokenVerification

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
