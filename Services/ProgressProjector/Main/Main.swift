@main
struct Main {
    static func main() async {
        print("not yet built")
    }
}
