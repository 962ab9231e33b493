// swift-format-ignore-file
// Not a target: a stand-in for the Darwin notification API (notify.h, re-exported by Apple's Darwin module), used by
// .ci/apple-typecheck to type-check TokenKitAppLifecycle's DarwinSessionChangeNotifier on Linux. Only the symbols
// that file uses; signatures as Apple documents them, no behaviour:
//   https://developer.apple.com/documentation/darwinnotify/darwin-notification-api
//   https://developer.apple.com/documentation/darwinnotify/notify_post(_:)
//     func notify_post(_ name: UnsafePointer<CChar>!) -> UInt32
//   https://developer.apple.com/documentation/darwinnotify/notify_register_dispatch(_:_:_:_:)
//     func notify_register_dispatch(_ name: UnsafePointer<CChar>!, _ out_token: UnsafeMutablePointer<Int32>!,
//                                   _ queue: dispatch_queue_t!, _ handler: notify_handler_t!) -> UInt32
//   https://developer.apple.com/documentation/darwinnotify/notify_cancel(_:)
//     func notify_cancel(_ token: Int32) -> UInt32
// Approximations: `notify_handler_t` is a C block (`@convention(block) (Int32) -> Void`), which Linux Swift cannot
// spell, so it is a plain closure here; `dispatch_queue_t` is `DispatchQueue` in Swift on Apple platforms too.
// `NOTIFY_STATUS_OK` is a `#define ... 0` in notify.h, which Swift imports as an `Int32` constant (compared with the
// functions' `UInt32` status through BinaryInteger's mixed-type `==`).
@_exported import Dispatch

public typealias dispatch_queue_t = DispatchQueue
public typealias notify_handler_t = (Int32) -> Void

public var NOTIFY_STATUS_OK: Int32 { 0 }

public func notify_post(_ name: UnsafePointer<CChar>!) -> UInt32 { 0 }

public func notify_register_dispatch(
    _ name: UnsafePointer<CChar>!, _ out_token: UnsafeMutablePointer<Int32>!, _ queue: dispatch_queue_t!,
    _ handler: notify_handler_t!
) -> UInt32 { 0 }

public func notify_cancel(_ token: Int32) -> UInt32 { 0 }
