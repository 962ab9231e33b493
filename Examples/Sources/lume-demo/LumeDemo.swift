/// Placeholder while the Lume demo is written.
@main
struct LumeDemo {
    static func main() {}
}
