fn main() { let t = tch::Tensor::from_slice(&[1.0f32, 2.0]); println!("cuda={} {:?}", tch::Cuda::is_available(), t.sum(tch::Kind::Float)); }
