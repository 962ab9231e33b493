import NIOCore
import NIOHTTP1
import NIOPosix

/// A keep-alive HTTP/1.1 server on 127.0.0.1 that answers at once: 200 with a small JSON body when the request
/// carries the expected `Authorization`, 401 otherwise. Both transports meet the same server, so the ratio is the
/// transports' own cost.
final class LoopbackHTTPServer {
    let channel: any Channel
    let port: Int

    init(group: MultiThreadedEventLoopGroup, expectedAuthorization: String) async throws {
        let expected = expectedAuthorization
        channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 512)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(AnswerHandler(expectedAuthorization: expected))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
    }

    func close() async throws { try await channel.close() }
}

/// Answers each request head once its end arrives.
private final class AnswerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let expectedAuthorization: String
    private var authorized = false
    private var keepAlive = true
    private let body = #"{"ok":true}"#

    init(expectedAuthorization: String) { self.expectedAuthorization = expectedAuthorization }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            authorized = head.headers["authorization"].first == expectedAuthorization
            keepAlive = head.isKeepAlive
        case .body:
            break
        case .end:
            var headers = HTTPHeaders()
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "content-length", value: authorized ? String(body.utf8.count) : "0")
            let head = HTTPResponseHead(
                version: .http1_1, status: authorized ? .ok : .unauthorized, headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if authorized {
                context.write(
                    wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))),
                    promise: nil)
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            if !keepAlive { context.close(promise: nil) }
        }
    }
}
