@main
struct KafkaBench {
    static func main() {}
}
