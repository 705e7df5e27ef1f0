fn main() { println!("llmprof"); }
