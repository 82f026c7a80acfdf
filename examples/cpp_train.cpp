// A C++ program linked with libtorch: a small MLP trained with SGD. Nothing
// in it knows about acc; LD_PRELOAD=libacc.so records it like a Python run.
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>

int main() {
  const char* steps_env = std::getenv("MLP_STEPS");
  const int steps = steps_env != nullptr ? std::atoi(steps_env) : 3;
  torch::manual_seed(0);
  at::set_num_threads(1);
  torch::nn::Sequential model(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  torch::Tensor x = torch::randn({5, 8});
  torch::Tensor target = torch::randn({5, 4});
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    torch::Tensor loss = torch::mse_loss(model->forward(x), target);
    loss.backward();
    optimizer.step();
    std::printf("step %d loss %.17g\n", step, loss.item<double>());
  }
  return 0;
}
